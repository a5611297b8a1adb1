"""The memory pool of a unified-memory NVIDIA board (DGX Spark's GB10, Jetson).

There the GPU has no memory of its own: ``nvmlDeviceGetMemoryInfo`` answers
NVML_ERROR_NOT_SUPPORTED (NVIDIA's DGX Spark and Jetson documentation: use the
system's memory figures), and what its processes can allocate is the
system's memory. The pool is psutil's ``virtual_memory()``: total, and as
free what the kernel says can be given without swapping (``available``).
"""

from __future__ import annotations

import psutil

POOL_NOTE = (
    "unified memory: the GPU shares the system's memory; total and free are the "
    "system's (free = what the kernel can give without swapping)"
)


def system_pool() -> tuple[int, int, int] | None:
    """(total, used, free) bytes of the shared pool; None where psutil cannot say."""
    try:
        vm = psutil.virtual_memory()
    except (OSError, RuntimeError):
        return None
    free = int(vm.available)
    return int(vm.total), int(vm.total) - free, free
