"""Whether two file descriptors are the same open file: the kcmp(2) system call.

A DRM client is an open file of a device node; dup(), fork() and SCM_RIGHTS
give it more descriptors, in one process or several. The kernel's
drm-usage-stats document (Documentation/gpu/drm-usage-stats.rst) names
``drm-client-id`` as the way to tell them apart; where a driver prints none,
``kcmp(pid1, pid2, KCMP_FILE, fd1, fd2)`` answers 0 for the same file (as
nvtop does; kcmp(2): it needs the right to ptrace both processes, so another
user's processes answer EPERM). glibc has no wrapper: the raw system call,
through ctypes.
"""

from __future__ import annotations

import ctypes
import os
import platform

KCMP_FILE = 0  # include/uapi/linux/kcmp.h
# the system call's number per architecture (arch/*/ syscall tables)
_NUMBERS = {"x86_64": 312, "aarch64": 272, "arm64": 272, "ppc64le": 354, "s390x": 343, "riscv64": 272}


def _syscall():
    number = _NUMBERS.get(platform.machine())
    if number is None:
        return None, None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall, number
    except (OSError, AttributeError):
        return None, None


_CALL, _NUMBER = _syscall()


def same_file(pid1: int, fd1: int, pid2: int, fd2: int) -> bool | None:
    """True: the two fds are one open file; False: two files; None: the kernel would
    not say (not permitted, an fd closed meanwhile, no kcmp on this machine)."""
    if _CALL is None:
        return None
    got = _CALL(
        ctypes.c_long(_NUMBER),
        ctypes.c_long(pid1),
        ctypes.c_long(pid2),
        ctypes.c_long(KCMP_FILE),
        ctypes.c_ulong(fd1),
        ctypes.c_ulong(fd2),
    )
    if got < 0:
        return None
    return got == 0


def available() -> bool:
    """Whether this kernel answers kcmp for this process's own fds."""
    return same_file(os.getpid(), 0, os.getpid(), 0) is True
