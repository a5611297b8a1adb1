"""What a plan is judged against: the memory one process can get on each GPU,
and what is free on it now.

On a MIG-enabled GPU a process gets one slice, never the whole card, so the
targets are its slices ("GPU 0 MIG 3g.40gb", the slice's memory). On a
unified-memory board (GB10, Jetson) the pool is the system's memory, which the
OS and every other program share: the target is what the pool can give, the
memory free now plus what the GPU's processes already hold. Beside the
capacity, ``gpus_now`` gives each target's memory free at this moment and
the processes holding the most, so a plan can say "fits on an empty card;
does not fit now".
"""

from __future__ import annotations

from vramscope.core.planner.request import GpuNow
from vramscope.core.processes.process_names import process_label
from vramscope.core.samples import Frame

HOLDERS_SHOWN = 3


def fit_targets(frame: Frame | None) -> list[tuple[str, int]]:
    """[(name, capacity in bytes)] for every GPU (or MIG slice) whose size is known."""
    return [(name, total) for name, total, _, _ in _targets(frame)]


def gpus_now(frame: Frame | None) -> tuple[GpuNow, ...]:
    """Free memory and the largest holders now, per target whose free memory is known."""
    out = []
    for name, _total, free, procs in _targets(frame):
        if free is None:
            continue
        held = sorted((p for p in procs if p.used), key=lambda p: -p.used)[:HOLDERS_SHOWN]
        out.append(GpuNow(name, free, tuple((process_label(p), p.used) for p in held)))
    return tuple(out)


def _targets(frame: Frame | None):
    for gpu in frame.gpus if frame is not None else ():
        if gpu.mig_mode and gpu.slices:
            for s in gpu.slices:
                if s.total:
                    yield f"{gpu.label} MIG {s.profile or s.uuid}", s.total, s.free, s.processes
        elif gpu.unified and gpu.free is not None:
            held = sum(p.used for p in gpu.processes if p.used is not None)
            yield f"{gpu.label}: {gpu.name} (unified memory)", gpu.free + held, gpu.free, gpu.processes
        elif gpu.total:
            yield f"{gpu.label}: {gpu.name}", gpu.total, gpu.free, gpu.processes
