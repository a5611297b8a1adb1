"""The diagnostics' threshold options (``--idle-minutes`` ...) and what they set; the
parser's side (argparse types, ``--watch``) is commands/diagnostic_options.py.

Light on imports: command modules read these at parser-build time.
"""

from __future__ import annotations

import time

from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.units import MiB

# option -> (settings field, type, scale, help)
THRESHOLD_OPTIONS = {
    "--squatter-min-mib": ("squatter_min_bytes", float, MiB,
                           "a process idle and holding at least this much is a squatter (default 256)"),
    "--idle-minutes": ("idle_minutes", float, 1, "minutes at 0 %% SM before it is flagged (default 5)"),
    "--kernel-idle-minutes": ("kernel_idle_minutes", float, 1,
                              "minutes since its last execution before a Jupyter kernel holding VRAM is listed (default 10)"),
    "--orphan-idle-minutes": ("orphan_idle_minutes", float, 1,
                              "minutes idle before a process whose parent is gone is flagged (default 1)"),
    "--unattributed-min-mib": ("unattributed_min_bytes", float, MiB,
                               "GPU memory without a visible owner flagged above this (default 1024)"),
    "--leak-steps": ("leak_steps", int, 1,
                     "optimizer steps a climb must span to be a leak (default 30)"),
    "--leak-min-mib-per-step": ("leak_min_slope_bytes", float, MiB,
                                "smallest growth per step that counts as a leak (default 1)"),
    "--near-oom-free-mib": ("near_oom_free_bytes", float, MiB,
                            "free memory below this is near-OOM (default 1024)"),
    "--near-oom-horizon-minutes": ("near_oom_horizon_minutes", float, 1,
                                   "flag when the trend fills the GPU within this (default 10)"),
}


def settings_from_args(args, base: DiagnosticSettings | None = None) -> DiagnosticSettings:
    changes = {}
    for flag, (field, kind, scale, _) in THRESHOLD_OPTIONS.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is not None:
            value = value * scale
            changes[field] = int(value) if field.endswith("_bytes") or kind is int else float(value)
    return (base or DiagnosticSettings()).with_overrides(**changes)


def watch(pipeline, seconds: float, interval: float = 1.0,
          monotonic=time.monotonic, sleep=time.sleep, each=None):
    """Sample every ``interval`` seconds for ``seconds`` (at least once) through
    ``pipeline`` (whose diagnostics stage sees every frame); returns the last frame.
    ``each(frame)``: called with every frame but the last (a live display)."""
    interval = max(0.1, interval)
    start = monotonic()
    k = 0
    while True:
        frame = pipeline.sample_once()
        k += 1
        if each is not None and (start + k * interval) - start <= seconds + 1e-9:
            each(frame)
        due = start + k * interval
        if due - start > seconds + 1e-9:
            return frame
        now = monotonic()
        if due > now:
            sleep(due - now)
