"""Outside PyTorch, explained: the baseline of NVML's per-process figure minus
PyTorch's reserved (the CUDA context) and its jumps, each paired with the event
that came with it where one did.

The monitor records the bucket per frame (sources/agents/agent_client.py); the agent
reports the events that bring memory outside the caching allocator
(agent/allocator/outside_events.py): a process group's creation (NCCL), a
``torch.compile`` compilation (Triton, autotuning), and the first forward,
whose first matmul creates cuBLAS's workspace and cuDNN's handles ("loaded").
A jump is a rise of at least JUMP_MIN between two readings; its event is the
latest one between the reading before it (less PAIR_SLACK, for the agent's
and the monitor's clocks and sampling) and the reading that shows it, each event with one jump only.
Qt-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vramscope.agent.protocol import Bucket, EventKind
from vramscope.core.agent_figures.agent_keys import PHASE_LOADED, STEPS_DEVICE, event_metric, series_key
from vramscope.core.units import MiB, fmt_bytes

JUMP_MIN = 32 * MiB
PAIR_SLACK = 2.0  # seconds
CAUSES = {
    EventKind.PROCESS_GROUP_INIT: "process-group init (NCCL)",
    EventKind.COMPILE: "torch.compile",
    EventKind.LOADED: "first forward (first matmul: cuBLAS/cuDNN workspaces)",
}


@dataclass(frozen=True, slots=True)
class Jump:
    t: float
    before: int
    after: int
    cause: str | None  # None: no event came with it

    @property
    def size(self) -> int:
        return self.after - self.before

    def text(self) -> str:
        return (
            f"+{fmt_bytes(self.size)} with {self.cause}"
            if self.cause
            else f"+{fmt_bytes(self.size)} (no event came with it)"
        )


@dataclass(frozen=True, slots=True)
class OutsideStory:
    baseline: int | None  # the first reading: the CUDA context
    now: int | None
    jumps: tuple[Jump, ...]

    def text(self) -> str | None:
        if self.baseline is None:
            return None
        bits = [f"Outside PyTorch: baseline {fmt_bytes(self.baseline)} (CUDA context)"]
        bits += [j.text() for j in self.jumps]
        if self.now is not None:
            bits.append(f"now {fmt_bytes(self.now)}")
        return " · ".join(bits)


def story(times, values, events) -> OutsideStory:
    """``times``/``values``: the bucket's readings (NaN = not known); ``events``:
    [(time, cause text)]."""
    pts = [(float(t), int(v)) for t, v in zip(times, values) if v is not None and not math.isnan(float(v))]
    if not pts:
        return OutsideStory(None, None, ())
    events = sorted(events)
    used: set[int] = set()
    jumps = []
    for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
        if v1 - v0 >= JUMP_MIN:
            came = [i for i, (te, _c) in enumerate(events) if t0 - PAIR_SLACK < te <= t1 and i not in used]
            if came:
                used.add(came[-1])
            jumps.append(Jump(t1, v0, v1, events[came[-1]][1] if came else None))
    return OutsideStory(pts[0][1], pts[-1][1], tuple(jumps))


def story_from_store(
    store, pid: int, start_time: float | None, device: str, since: float | None = None
) -> OutsideStory:
    t, v = store.series(series_key(pid, start_time, device, Bucket.OUTSIDE_PYTORCH), since)
    events = []
    for kind, cause in CAUSES.items():
        key = (
            series_key(pid, start_time, device, PHASE_LOADED)
            if kind == EventKind.LOADED
            else series_key(pid, start_time, STEPS_DEVICE, event_metric(kind))
        )
        te, _ = store.series(key, since)
        events += [(float(x), cause) for x in te]
    return story(t, v, events)
