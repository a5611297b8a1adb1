"""Host CPU % and host memory of the GPU processes, once per sampling pass.

From the pass's one read of ``/proc/<pid>/stat`` per process
(sources/machine/proc_stat.py): utime + stime (clock ticks) and rss (pages), fields
14, 15 and 24 in proc(5). CPU % is the CPU time used between two passes over
the wall time between them, 100 % being one core -- what top and nvitop
show. The first pass for a process has no CPU figure yet (``None``, not 0).
Where /proc is missing, psutil's ``cpu_times()`` and ``memory_info().rss``
give the same figures.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

import psutil

from vramscope.sources.machine.proc_stat import ProcStat, read_stat


def read_cpu_rss(pid: int) -> tuple[float, int] | None:
    """(CPU seconds used so far, resident bytes), or None when not readable."""
    return from_stat(pid, read_stat(pid))


def from_stat(pid: int, stat: ProcStat | None) -> tuple[float, int] | None:
    """The figures from a read of /proc/<pid>/stat; psutil where there is no /proc."""
    if stat is None:
        return _psutil_cpu_rss(pid) if not os.path.isdir("/proc/self") else None
    return stat.cpu_seconds, stat.rss


def _psutil_cpu_rss(pid: int) -> tuple[float, int] | None:
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            t = proc.cpu_times()
            return t.user + t.system, proc.memory_info().rss
    except (psutil.Error, OSError):
        return None


class HostUsage:
    """``read(pids)`` -> {pid: (cpu % or None, host bytes or None)} for one pass."""

    def __init__(self, clock=time.monotonic, reader=read_cpu_rss):
        self._clock = clock
        self._reader = reader
        self._last: dict[int, tuple[float, float]] = {}  # pid -> (cpu seconds, when)

    def read(
        self, pids: Iterable[int], stats: dict | None = None
    ) -> dict[int, tuple[float | None, int | None]]:
        """``stats``: {pid: ProcStat or None}, this pass's /proc/<pid>/stat
        reads where the caller made them; the others are read here."""
        now = self._clock()
        out: dict[int, tuple[float | None, int | None]] = {}
        seen: dict[int, tuple[float, float]] = {}
        last_seen = self._last
        for pid in set(pids):
            if stats is not None and pid in stats:
                stat = stats[pid]
                got = (stat.cpu_seconds, stat.rss) if stat is not None else from_stat(pid, None)
            else:
                got = self._reader(pid)
            if got is None:
                out[pid] = (None, None)
                continue
            cpu, rss = got
            percent = None
            last = last_seen.get(pid)
            if last is not None and now > last[1] and cpu >= last[0]:  # less: a reused PID
                percent = round(100.0 * (cpu - last[0]) / (now - last[1]), 1)
            seen[pid] = (cpu, now)
            out[pid] = (percent, rss)
        self._last = seen
        return out
