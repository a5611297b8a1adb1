"""The agent events of a scripted demo run (sources/demo/demo_runs.py): a "step"
event per optimizer step, with its phases, their peaks and times as the agent
reads them, and the OOM event PyTorch's observer would have seen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vramscope.agent.protocol import TRAINING_PHASES, EventKind, Phase
from vramscope.core.samples import AgentBuckets, AgentEvent
from vramscope.core.units import GiB, MiB
from vramscope.sources.demo.demo_clock import round_up

if TYPE_CHECKING:
    from vramscope.sources.demo.demo_runs import ScriptedRun


def step_events(
    run: ScriptedRun, prev_r: float, r: float, start_time: float, limit: int = 256
) -> list[AgentEvent]:
    """ "step" events for the steps that ended in (prev_r, r] (the newest ``limit``)."""
    if r < run.clock.end(1):
        return []
    hi = run.clock.count(r)
    lo = run.clock.count(prev_r) if prev_r >= run.clock.end(1) else 0
    out = []
    for k in range(max(lo + 1, hi - limit + 1), hi + 1):
        end, begin = run.clock.end(k), run.clock.end(k - 1)
        before = run.allocated_after(k - 1) if k > 1 else run.s.weights + run.s.gradients
        # the phases the agent reads: activations held at the end of forward,
        # freed by the end of backward (a few temporaries left), the step's result
        phases = {
            Phase.FORWARD: run.step_peak(k),
            Phase.BACKWARD: before + run.batch_activations(k) // 8,
            Phase.OPTIMIZER: run.allocated_after(k),
        }
        # each phase's peak: backward's first temporaries come while the activations
        # are still held (the step's peak, within what reserved has room for), the
        # update adds its own; exact, as where the allocator's all-time counter rises
        extra = max(0, min(run.s.gradients // 8, run.s.gap0 // 2))
        peaks = {
            Phase.FORWARD: [phases[Phase.FORWARD], None],
            Phase.BACKWARD: [phases[Phase.FORWARD] + extra, None],
            Phase.OPTIMIZER: [phases[Phase.OPTIMIZER] + run.s.optimizer_state // 8, None],
        }
        span = end - begin
        times = {
            Phase.FORWARD: start_time + begin + 0.4 * span,
            Phase.BACKWARD: start_time + begin + 0.9 * span,
            Phase.OPTIMIZER: start_time + end,
        }
        out.append(
            AgentEvent(
                EventKind.STEP,
                start_time + end,
                {
                    "step": k,
                    "peak_allocated": run.step_peak(k),
                    "allocated_after": run.allocated_after(k),
                    "devices": {
                        run.s.device: {
                            "peak_allocated": run.step_peak(k),
                            "allocated_after": run.allocated_after(k),
                        }
                    },
                    "duration": end - begin,
                    "phases": {run.s.device: phases},
                    "phase_order": list(TRAINING_PHASES),
                    "phase_times": times,
                    "phase_peaks": {run.s.device: peaks},
                },
            )
        )
    return out


def oom_event(
    run: ScriptedRun,
    start_time: float,
    device_total: int,
    free: int,
    allocated: int,
    reserved: int,
    buckets: AgentBuckets,
) -> AgentEvent:
    """What PyTorch's OOM observer would have seen, with the breakdown at that instant."""
    s = run.s
    requested = max(1536 * MiB, round_up(free + 512 * MiB))
    message = (
        f"CUDA out of memory. Tried to allocate {requested / GiB:.2f} GiB. "
        f"GPU {s.device.split(':')[-1]} has a total capacity of "
        f"{device_total / GiB:.2f} GiB of which {free / GiB:.2f} GiB is free. "
        f"Of the allocated memory {allocated / GiB:.2f} GiB is allocated by PyTorch, "
        f"and {(reserved - allocated) / GiB:.2f} GiB is reserved by PyTorch but "
        f"unallocated."
    )
    return AgentEvent(
        EventKind.OOM,
        start_time + run.oom_r,
        {
            "device": s.device,
            "requested": requested,
            "device_total": device_total,
            "device_free": free,
            "allocated": allocated,
            "reserved": reserved,
            "buckets": buckets.as_dict(),
            "message": message,
        },
    )
