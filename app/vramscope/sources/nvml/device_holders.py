"""Processes holding /dev/nvidia* open, found in /proc/<pid>/fd where readable.

What ``fuser -v /dev/nvidia*`` shows, without running it: every CUDA or
driver client opens /dev/nvidiactl and /dev/nvidia<N>, so a process that
holds them but is on no NVML list (another container's view, a driver that
lost track) can still be named. Reading every process's fd table costs
milliseconds, so the scan runs at most every ``interval`` seconds and is
cached in between. Another user's fds are not readable without root: those
processes are simply not found (nothing is guessed).
"""

from __future__ import annotations

import os
import time

from vramscope.sources.machine.containers import PROC

DEVICE_PREFIX = "/dev/nvidia"


def scan(proc_root: str = PROC) -> dict[int, tuple[str, ...]]:
    """{pid: sorted /dev/nvidia* paths it holds open} for every readable process."""
    found: dict[int, tuple[str, ...]] = {}
    try:
        entries = os.scandir(proc_root)
    except OSError:
        return found
    own = os.getpid()
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid == own:
                continue
            fd_dir = f"{proc_root}/{pid}/fd"
            try:
                fds = os.listdir(fd_dir)
            except OSError:  # another user's process, or it just exited
                continue
            held = set()
            for fd in fds:
                try:
                    target = os.readlink(f"{fd_dir}/{fd}")
                except OSError:
                    continue
                if target.startswith(DEVICE_PREFIX):
                    held.add(target)
            if held:
                found[pid] = tuple(sorted(held))
    return found


class DeviceHolderScanner:
    """``holders(now)``: the last scan, redone when ``interval`` seconds have passed."""

    def __init__(self, interval: float = 10.0, proc_root: str = PROC, clock=time.monotonic):
        self.interval = float(interval)
        self.proc_root = proc_root
        self._clock = clock
        self._last: float | None = None
        self._found: dict[int, tuple[str, ...]] = {}
        self.scans = 0

    def holders(self) -> dict[int, tuple[str, ...]]:
        now = self._clock()
        if self._last is None or now - self._last >= self.interval:
            self._found = scan(self.proc_root)
            self._last = now
            self.scans += 1
        return self._found
