"""The monitor's store keys for agent series: one series per (agent process, device, metric).

Only the monitor uses these (the store, the agent panel, sessions); the wire
vocabulary both sides share stays in agent/protocol/, which loads into
training processes and is kept to what the agent needs.
"""

from __future__ import annotations

from vramscope.agent.protocol import PEAK_BOUND

STORE_KEY = "agent"
STEPS_DEVICE = "steps"  # pseudo-device of the per-step series ("duration", "step")
DEVICE_METRICS = ("allocated", "reserved", "peak_allocated", PEAK_BOUND)  # per sample and device
STEP_ALLOCATED_AFTER = "step_allocated_after"
STEP_PEAK_ALLOCATED = "step_peak_allocated"
PHASE_LOADED = "phase_loaded"
OOM_REQUESTED = "oom_requested"


def phase_peak_metric(phase: str, bound: bool = False) -> str:
    """The series of a phase's peak per step: "phase_peak_forward" (exact, or its lower
    bound where the allocator's all-time counter did not rise), and with ``bound`` its
    upper bound where it is not exact ("phase_peak_bound_forward")."""
    return f"phase_peak_bound_{phase}" if bound else f"phase_peak_{phase}"


def phase_metric(phase: str) -> str:
    """The series name of a step phase: "phase_forward", ... (and "phase_loaded")."""
    return f"phase_{phase}"


def event_metric(kind: str) -> str:
    """The series of an event kind's times, on the steps pseudo-device ("event_compile")."""
    return f"event_{kind}"


def series_key(pid: int, start_time: float | None, device: str, metric: str) -> tuple:
    """The store key of one agent series."""
    return (STORE_KEY, pid, start_time, device, metric)
