"""Whether (pid, start time) may be signalled, and why not (no Qt).

The checks of core/end_process/actions.py, made before every signal and for
the confirmation dialog (DESIGN.md, "Safety"): the request's numbers name a
process at all; never init, vramscope itself, a zombie, a kernel thread or a
system account's process (uid below UID_MIN of /etc/login.defs), even when
vramscope runs as root; pid + start time still name the process the user saw
(a reused PID is refused); only the user's own processes ("own" under sudo is
SUDO_UID's: core/end_process/process_owner.py); nothing in read-only mode.
Each refusal is one line the user reads.
"""

from __future__ import annotations

import math
import os
import time

import psutil

from vramscope.core.end_process.process_owner import is_kernel_thread

START_TIME_TOLERANCE = 0.05  # seconds; psutil derives start times from clock ticks
READ_ONLY_REFUSAL = "vramscope runs read-only (--read-only): ending processes is disabled"

PID_MAX = 1 << 22  # the kernel's largest pid_max (proc(5)): a larger number is no process


def request_problem(pid, start_time) -> str | None:
    """Why (pid, start time) cannot name a process -- from a remote request, a damaged
    session -- or None. Checked before the numbers reach the kernel or psutil."""
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid <= PID_MAX:
        return f"{str(pid)[:40]} is not a process id (1 to {PID_MAX}); refusing"
    if start_time is not None and not (
        isinstance(start_time, (int, float)) and math.isfinite(start_time) and start_time >= 0
    ):
        return f"the start time {str(start_time)[:40]} is not a time; refusing"
    return None


def verify(pid: int, start_time: float | None, *, read_only: bool, owner_uid: int, first_user_uid: int):
    """(process, None) when pid + start time still name the same process,
    else (process or None, why not)."""
    problem = request_problem(pid, start_time)
    if problem:
        return None, problem
    if read_only:
        return _try_process(pid), READ_ONLY_REFUSAL
    if pid <= 1:
        return None, f"pid {pid} is the system's init process; refusing"
    if pid == os.getpid():
        return None, "that is vramscope itself; refusing"
    try:
        proc = psutil.Process(pid)
        created = proc.create_time()
        status = safe(proc.status)
    except psutil.NoSuchProcess:
        return None, f"pid {pid} has already exited"
    except psutil.AccessDenied:
        return None, f"pid {pid} cannot be inspected from here (access denied); refusing"
    if start_time is None:
        return proc, (
            f"the start time of pid {pid} is unknown, so it cannot be verified "
            "to be the process you saw; refusing"
        )
    if not same_start(created, start_time):
        return proc, (
            f"pid {pid} is no longer the process you saw (it started at "
            f"{_clock(created)}, the one shown started at {_clock(start_time)}): "
            "the PID was reused; refusing"
        )
    if status == psutil.STATUS_ZOMBIE:
        parent = safe(proc.ppid)
        return proc, (
            f"pid {pid} is a zombie: it has already exited and only its parent "
            f"(pid {parent}) can reap it; end the parent instead"
        )
    if is_kernel_thread(pid):
        return proc, f"pid {pid} is a kernel thread; vramscope never signals the kernel"
    uid = _real_uid(proc)
    if uid is not None and uid < first_user_uid:
        owner = safe(proc.username) or f"uid {uid}"
        return proc, (
            f"pid {pid} belongs to the system account {owner}; vramscope never "
            "ends system processes, even when it runs as root"
        )
    if not is_own(proc, owner_uid, first_user_uid):
        return proc, not_own_message(proc, owner_uid)
    return proc, None


def is_own(proc, owner_uid: int, first_user_uid: int) -> bool:
    if proc is None:
        return False
    uid = _real_uid(proc)
    return uid is not None and uid == owner_uid and uid >= first_user_uid


def not_own_message(proc, owner_uid: int) -> str:
    owner = safe(proc.username) if proc is not None else None
    me = owner_uid
    try:
        import pwd

        me_name = pwd.getpwuid(me).pw_name
    except (ImportError, KeyError):
        me_name = f"uid {me}"
    return (
        f"pid {proc.pid} belongs to user {owner or 'another user'}; vramscope only ends "
        f"your own processes (you are {me_name})"
    )


def _real_uid(proc) -> int | None:
    try:
        return proc.uids().real
    except (psutil.Error, AttributeError):
        return None


def _try_process(pid):
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def same_start(created: float, expected: float | None) -> bool:
    return expected is not None and abs(created - expected) <= START_TIME_TOLERANCE


def safe(fn):
    try:
        return fn()
    except psutil.Error:
        return None


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))
