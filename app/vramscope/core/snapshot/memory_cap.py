"""A cap on this process's memory while a snapshot is unpickled.

A pickle names its own sizes: a damaged or crafted file can ask the unpickler
for far more memory than the file could ever hold -- a memo index of 2**32
(``LONG_BINPUT``) makes the C unpickler grow and zero its memo table to that
size, a ``BINBYTES8`` length makes it allocate that many bytes -- and the
machine runs out of memory before anything fails. While a file is loaded the
process's address space (``RLIMIT_AS``, the setrlimit(2) manual) is capped at
what it has plus what the load can need (a multiple of the file, measured in
bench/snapshot_load.py), so such a request fails at once with MemoryError and
the file is refused in one line. The previous limit is put back after the load;
loads are taken one at a time. Linux only (elsewhere no cap is set).
"""

from __future__ import annotations

import contextlib
import threading

LOAD_FACTOR = 8  # bytes of address space per byte of file a load may add (peak RSS is ~4.5x)
SLACK = 1 << 30  # and this much more (thread arenas, the columns being built)
_ONE_AT_A_TIME = threading.Lock()


def _address_space() -> int | None:
    """This process's address space now (VmSize), bytes; None where unknown."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f.read(16384).splitlines():
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@contextlib.contextmanager
def capped_for(file_size: int):
    """No more address space than now plus what loading ``file_size`` bytes can need."""
    try:
        import resource
    except ImportError:  # not a Unix
        yield
        return
    with _ONE_AT_A_TIME:
        now = _address_space()
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = None if now is None else now + LOAD_FACTOR * max(file_size, 0) + SLACK
        if limit is not None and hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if limit is None or (soft != resource.RLIM_INFINITY and soft <= limit):
            yield  # (unknown, or already tighter)
            return
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
