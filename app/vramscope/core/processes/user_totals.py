"""Who uses the shared box: device memory per user, per GPU and per machine.

A process whose user is not known here (another PID namespace, a ghost) is
counted under ``None`` ("unknown"), never dropped; a process whose memory
NVML does not report adds to ``unreported`` instead of adding 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vramscope.core.processes.process_columns import used as used_of
from vramscope.core.processes.process_columns import users
from vramscope.core.samples import Frame, GpuProcess

UNKNOWN_USER = "unknown"


@dataclass(frozen=True, slots=True)
class UserTotal:
    user: str | None  # None: not known from here
    used: int | None  # bytes over every GPU (the processes with a figure); None: none had one
    per_gpu: tuple[tuple[int, int], ...]  # (gpu index, bytes), by index
    processes: int  # distinct (gpu, pid) entries
    unreported: int = 0  # entries with no per-process figure (n/a)

    @property
    def label(self) -> str:
        return self.user or UNKNOWN_USER

    def as_dict(self) -> dict[str, object]:
        return {
            "user": self.user,
            "used": self.used,
            "gpus": [{"gpu": g, "used": b} for g, b in self.per_gpu],
            "processes": self.processes,
            "unreported": self.unreported,
        }


def user_totals(frame: Frame | None) -> list[UserTotal]:
    """One entry per user, the biggest first (read off a stream reader's columns without
    making its processes: 16k a frame on a big box)."""
    out = [
        UserTotal(user=u, used=used, per_gpu=per_gpu, processes=n, unreported=na)
        for u, (used, per_gpu, n, na) in sums_by(frame, users).items()
    ]
    out.sort(key=lambda t: (-(t.used or 0), t.user is None, t.user or ""))
    return out


def sums_by(
    frame: Frame | None,
    keys_of: Callable[[Sequence[GpuProcess]], Iterable[Any]],
    skip_none: bool = False,
) -> dict[Any, tuple[int | None, tuple[tuple[int, int], ...], int, int]]:
    """key -> (bytes or None, ((gpu, bytes), ...), entries, n/a entries) over the
    frame's processes; ``keys_of(processes)``: each process's key, in order (None
    counts as a key of its own unless ``skip_none``). All n/a: None, never 0."""
    acc: dict[Any, list[Any]] = {}  # key -> [bytes, {gpu: bytes}, entries, n/a entries]
    for gpu in frame.gpus if frame is not None else ():
        index, procs = gpu.index, gpu.processes
        for key, used in zip(keys_of(procs), used_of(procs)):
            if key is None and skip_none:
                continue
            entry = acc.get(key)
            if entry is None:
                entry = acc[key] = [0, {}, 0, 0]
            entry[2] += 1
            if used is None:
                entry[3] += 1
                continue
            entry[0] += used
            per_gpu = entry[1]
            per_gpu[index] = per_gpu.get(index, 0) + used
    return {
        k: (e[0] if e[3] < e[2] else None, tuple(sorted(e[1].items())), e[2], e[3]) for k, e in acc.items()
    }
