"""Ending a child started in a session of its own (``start_new_session=True``) with
everything it started: ssh or the window's sampler process, and a grandchild
that outlived them (a child of a sampler that crashed keeps its group, and
would keep the pipes open).

The group is sent SIGTERM (the leader ends its stream and commits its session),
given ``GRACE`` seconds, then SIGKILL for what is left (kill(2), killpg(3)).
A group id stays taken while any member lives (fork(2): a new process's PID
"does not match the ID of any existing process group"), so signalling the group
after its leader ended reaches only what that leader left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

GRACE = 2.0  # seconds the group has to end after SIGTERM, before SIGKILL


def end_group(proc: subprocess.Popen, grace: float = GRACE) -> None:
    """SIGTERM to ``proc``'s group, then SIGKILL to what is left after ``grace``; ``proc`` reaped."""
    signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    while group_alive(proc) and time.monotonic() < deadline:
        time.sleep(0.02)
    if proc.poll() is None or group_alive(proc):
        signal_group(proc, signal.SIGKILL)
    proc.wait()


def signal_group(proc: subprocess.Popen, signum) -> None:
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(proc: subprocess.Popen) -> bool:
    """Whether anything is left in ``proc``'s process group."""
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
