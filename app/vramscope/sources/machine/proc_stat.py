"""One read of ``/proc/<pid>/stat`` per process and sampling pass, shared.

The identity check of the process cache (start time: a reused PID has
another) and the host CPU time and resident memory of the process both come
from this one file (proc(5): fields 3 state, 4 ppid, 14-15 utime/stime,
22 starttime, 24 rss), so a pass reads it once per PID and hands the parsed
fields to both (sources/machine/processes.py, sources/machine/host_usage.py).

The file of a PID seen on the previous pass stays open and is read again
from offset 0 (``pread``): procfs regenerates the text on every read, and
an open ``/proc/<pid>/stat`` stays bound to the process it was opened for --
once that process has been reaped, reads fail with ESRCH even if the PID is
reused, so a held file never reports another process. That costs about half
of an open/read/close; a text equal to the previous pass's (an idle process)
is not parsed again. At most ``keep`` files are held (a quarter of the
soft limit on open files, at most 1,024); PIDs beyond that are opened per
pass, as before.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable
from typing import NamedTuple

from vramscope.sources.machine.containers import PROC

MAX_STAT = 4096  # bytes read: the line is a few hundred (comm is at most 64)
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

# /proc/<pid>/stat state letters, as psutil names them.
STATES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": "zombie",
    "X": "dead",
    "x": "dead",
    "K": "wake-kill",
    "W": "waking",
    "I": "idle",
    "P": "parked",
}


class ProcStat(NamedTuple):
    status: str
    ppid: int
    start_ticks: int  # since boot; equal ticks for one PID mean the same process
    cpu_seconds: float  # user + system
    rss: int  # bytes


def parse_stat(data: bytes) -> ProcStat | None:
    """The fields of one /proc/<pid>/stat text, or None when it is not one."""
    # comm may hold spaces and parentheses: the fields start after the LAST ')'
    fields = data[data.rfind(b")") + 2 :].split(None, 22)
    try:
        state = fields[0].decode("ascii", "replace")
        return ProcStat(
            STATES.get(state, state),
            int(fields[1]),
            int(fields[19]),
            (int(fields[11]) + int(fields[12])) / _TICK,
            int(fields[21]) * _PAGE,
        )
    except (IndexError, ValueError):
        return None


def read_stat(pid: int, proc_root: str = PROC) -> ProcStat | None:
    """One open/read/close of /proc/<pid>/stat; None when it cannot be read."""
    try:
        fd = os.open(f"{proc_root}/{pid}/stat", _FLAGS)
    except OSError:
        return None
    try:
        return parse_stat(os.read(fd, MAX_STAT))
    except OSError:
        return None
    finally:
        os.close(fd)


def _keep_limit() -> int:
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        return 0
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(0, min(1024, soft // 4))


class StatReader:
    """``read_many(pids)`` -> {pid: ProcStat or None}, one read per PID.

    Files of PIDs not asked for on a pass are closed on that pass; ``close()``
    closes the rest."""

    def __init__(self, proc_root: str = PROC, keep: int | None = None):
        self.proc_root = proc_root
        self.keep = _keep_limit() if keep is None else int(keep)
        self._open: dict[int, int] = {}  # pid -> fd of its stat file
        self._parsed: dict[int, tuple[bytes, ProcStat]] = {}  # pid -> its last text, parsed

    def read_many(self, pids: Iterable[int]) -> dict[int, ProcStat | None]:
        held, parsed = self._open, self._parsed
        out: dict[int, ProcStat | None] = {}
        for pid in pids:
            fd = held.get(pid)
            if fd is not None:
                try:
                    data = os.pread(fd, MAX_STAT, 0)
                except OSError:  # the process it was opened for is gone
                    del held[pid]
                    parsed.pop(pid, None)
                    os.close(fd)
                else:
                    last = parsed.get(pid)
                    if last is not None and last[0] == data:  # an idle process: the same text
                        out[pid] = last[1]
                        continue
                    got = out[pid] = parse_stat(data)
                    if got is not None:
                        parsed[pid] = (data, got)
                    continue
            out[pid] = self._open_and_read(pid)
        for pid in [p for p in held if p not in out]:
            os.close(held.pop(pid))
            parsed.pop(pid, None)
        return out

    def _open_and_read(self, pid: int) -> ProcStat | None:
        try:
            fd = os.open(f"{self.proc_root}/{pid}/stat", _FLAGS)
        except OSError:
            return None
        try:
            data = os.read(fd, MAX_STAT)
        except OSError:
            data = b""
        got = parse_stat(data)
        if got is not None and len(self._open) < self.keep:
            self._open[pid] = fd
            self._parsed[pid] = (data, got)
        else:
            os.close(fd)
        return got

    def close(self) -> None:
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()
        self._parsed.clear()

    def __del__(self):  # a source dropped without close() must not leak files
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
