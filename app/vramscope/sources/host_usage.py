"""Host CPU % and host memory of the GPU processes, once per sampling pass.

One read of ``/proc/<pid>/stat`` per process and pass: utime + stime (clock
ticks) and rss (pages), fields 14, 15 and 24 in proc(5). CPU % is the CPU
time used between two passes over the wall time between them, 100 % being
one core -- what top and nvitop show. The first pass for a process has no
CPU figure yet (``None``, not 0). Where /proc is missing, psutil's
``cpu_times()`` and ``memory_info().rss`` give the same figures.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

import psutil

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def read_cpu_rss(pid: int) -> tuple[float, int] | None:
    """(CPU seconds used so far, resident bytes), or None when not readable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return _psutil_cpu_rss(pid) if not os.path.isdir("/proc/self") else None
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # comm may hold spaces: after the LAST ')'
    try:
        return (int(fields[11]) + int(fields[12])) / _TICK, int(fields[21]) * _PAGE
    except (IndexError, ValueError):
        return None


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

    def read(self, pids: Iterable[int]) -> dict[int, tuple[float | None, int | None]]:
        now = self._clock()
        out: dict[int, tuple[float | None, int | None]] = {}
        seen: dict[int, tuple[float, float]] = {}
        for pid in set(pids):
            got = self._reader(pid)
            if got is None:
                out[pid] = (None, None)
                continue
            cpu, rss = got
            percent = None
            last = self._last.get(pid)
            if last is not None and now > last[1] and cpu >= last[0]:  # less: a reused PID
                percent = round(100.0 * (cpu - last[0]) / (now - last[1]), 1)
            seen[pid] = (cpu, now)
            out[pid] = (percent, rss)
        self._last = seen
        return out
