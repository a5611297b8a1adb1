"""Every threshold the diagnostics use, in one frozen object the user can change.

Defaults follow public figures where there are any (PyTorch's CUDA notes,
pytorch.org/docs/stable/notes/cuda.html: the CUDA context alone takes a few
hundred MB, and an allocation fails well before "free" reaches 0, so about
1 GiB free is near-OOM), and otherwise are conservative so that a normal training
run raises nothing. ``with_overrides`` builds a changed copy (command line,
settings dialog); unknown names are refused with a clear message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vramscope.core.units import GiB, MiB


@dataclass(frozen=True, slots=True)
class DiagnosticSettings:
    # --- squatters ---------------------------------------------------------------
    squatter_min_bytes: int = 256 * MiB  # (a) holds at least this much ...
    idle_minutes: float = 5.0  # ... with 0 % SM for at least this long
    idle_sm_percent: int = 0  # SM % at or below this counts as idle
    # (b) a Jupyter kernel holding VRAM, idle (since its last execution) this long is
    # listed; reading between cells is not idleness, so this is minutes, not seconds
    kernel_idle_minutes: float = 10.0
    kernel_warn_minutes: float = 30.0  # ... and a warning from this long
    orphan_idle_minutes: float = 1.0  # (c) parent gone and idle this long (a zombie: at once)
    unattributed_min_bytes: int = 1 * GiB  # (d) NVML used minus the listed processes
    unattributed_minutes: float = 0.5  # (d) ... for at least this long (startup blips)
    lookup_notebooks: bool = True  # ask a running Jupyter server which notebook owns a kernel

    # --- fragmentation (agent processes) ----------------------------------------
    frag_gap_share: float = 0.30  # (reserved - allocated) / reserved at least this ...
    frag_min_gap_bytes: int = 512 * MiB  # ... and at least this many bytes ...
    frag_inactive_split_share: float = 0.25  # ... and inactive_split >= this share of the gap
    frag_inactive_split_min_bytes: int = 256 * MiB  # ... and at least this many bytes
    frag_retry_window_minutes: float = 10.0  # or num_alloc_retries rose within this window ...
    frag_min_retry_rises: int = 2  # ... at this many separate samples (one retry is not a trend)
    frag_persist_seconds: float = 10.0  # the gap condition must hold this long

    # --- leak ----------------------------------------------------------------------
    # K: a climb must span this many steps, and outlast the longest climb that ended in a
    # reset (a bounded sawtooth), before it is a leak
    leak_steps: int = 30
    leak_reset_min_bytes: int = 16 * MiB  # a drop this far below the climb's top is a reset
    leak_min_slope_bytes: int = 1 * MiB  # robust slope at least this many bytes per step
    # the rise must be significant: Kendall's tau of the recent window at least this many
    # standard deviations above 0 (jitter in an hour of steps stays below 4)
    leak_min_z: float = 4.0

    # --- eval with autograd --------------------------------------------------------
    eval_min_growth_bytes: int = 256 * MiB  # allocated growth that counts as "coinciding"
    eval_window_seconds: float = 60.0  # growth looked for this long after the event

    # --- near-OOM --------------------------------------------------------------------
    near_oom_free_bytes: int = 1 * GiB  # free below this is near-OOM
    near_oom_horizon_minutes: float = 10.0  # trend reaching capacity within this is near-OOM
    near_oom_critical_minutes: float = 2.0  # ... and critical within this (or free below 256 MiB)
    near_oom_critical_free_bytes: int = 256 * MiB
    near_oom_trend_minutes: float = 5.0  # how much history the trend is fitted on
    near_oom_min_points: int = 10  # fewest samples for a trend

    # --- growth without the agent (NVML per-process trend) ------------------------
    growth_min_bytes_per_minute: int = 32 * MiB  # slower than this is not growth
    growth_min_rise_bytes: int = 256 * MiB  # and it must have grown this much in its regime
    growth_min_seconds: float = 60.0  # over at least this long (near-OOM's trend too:
    # a model loading for 30 s is not a trend)

    # --- bookkeeping -----------------------------------------------------------------
    event_keep_minutes: float = 30.0  # OOM / eval / checkpointing alerts stay this long
    forget_after_minutes: float = 10.0  # state of a process not seen this long is dropped

    def with_overrides(self, **changes: Any) -> DiagnosticSettings:
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ValueError(f"unknown diagnostic setting(s): {', '.join(unknown)}")
        cleaned = {k: v for k, v in changes.items() if v is not None}
        for key, value in cleaned.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"{key} must not be negative (got {value})")
        return dataclasses.replace(self, **cleaned)


def forget_stale(
    state: dict[Any, Any],
    now: float,
    settings: DiagnosticSettings,
    last_seen: Callable[[Any], float] = lambda value: value.last_seen,
) -> None:
    """Drop per-process rule state not seen for ``forget_after_minutes``."""
    horizon = now - settings.forget_after_minutes * 60
    for key in [k for k, v in state.items() if last_seen(v) < horizon]:
        del state[key]
