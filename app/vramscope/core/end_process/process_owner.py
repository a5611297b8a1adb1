"""Whose processes vramscope may end: the acting user (under sudo, the one who
ran it), regular users from UID_MIN (login.defs(5)), and never a kernel thread."""

from __future__ import annotations

import os

PF_KTHREAD = 0x00200000  # the "flags" field of /proc/PID/stat (linux/sched.h)
DEFAULT_UID_MIN = 1000  # login.defs(5)


def acting_uid() -> int:
    """Whose processes vramscope may end: under sudo the user who ran it, else ours."""
    uid = os.getuid()
    sudo = os.environ.get("SUDO_UID", "")
    if uid == 0 and sudo.isdigit():
        return int(sudo)
    return uid


UID_MIN_VARIABLE = "VRAMSCOPE_UID_MIN"


def uid_min(path: str = "/etc/login.defs") -> int:
    """The first uid of a regular user (UID_MIN, login.defs(5)); below it: system accounts.

    ``VRAMSCOPE_UID_MIN`` overrides it -- e.g. 0 in a container where every process,
    the user's own included, runs as root. Kernel threads stay refused whatever it says.
    """
    env = os.environ.get(UID_MIN_VARIABLE, "")
    if env.isdigit():
        return int(env)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0] == "UID_MIN" and parts[1].isdigit():
                    return int(parts[1])
    except OSError:
        pass
    return DEFAULT_UID_MIN


def is_kernel_thread(pid: int) -> bool:
    """PF_KTHREAD in /proc/PID/stat (kthreadd, kworkers, ...): never a user's process."""
    if pid == 2:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        flags = int(data[data.rindex(b")") + 2 :].split()[6])  # field 9
    except (OSError, ValueError, IndexError):
        return False
    return bool(flags & PF_KTHREAD)
