"""What a plan is judged against: the memory one process can get on each GPU.

On a MIG-enabled GPU a process gets one slice, never the whole card, so the
targets are its slices ("GPU 0 MIG 3g.40gb", the slice's memory). On a
unified-memory board (GB10, Jetson) the pool is the system's memory, which the
OS and every other program share: the target is what the pool can give, the
memory free now plus what the GPU's processes already hold.
"""

from __future__ import annotations

from vramscope.core.samples import Frame


def fit_targets(frame: Frame | None) -> list[tuple[str, int]]:
    """[(name, capacity in bytes)] for every GPU (or MIG slice) whose size is known."""
    out: list[tuple[str, int]] = []
    for gpu in frame.gpus if frame is not None else ():
        if gpu.mig_mode and gpu.slices:
            out.extend((f"{gpu.label} MIG {s.profile or s.uuid}", s.total)
                       for s in gpu.slices if s.total)
        elif gpu.unified and gpu.free is not None:
            held = sum(p.used for p in gpu.processes if p.used is not None)
            out.append((f"{gpu.label}: {gpu.name} (unified memory)", gpu.free + held))
        elif gpu.total:
            out.append((f"{gpu.label}: {gpu.name}", gpu.total))
    return out
