"""The NVML error codes the NVML source decides on, and the end of one GPU's pass.

Codes from nvml.h's ``nvmlReturn_t`` (the same values as pynvml's
``NVML_ERROR_*``): every NVML call goes through the source's one wrapper
(``NvmlSource._call``), which turns an error into None ("not available")
and keeps its code; these say what the code means for the next pass.
"""

from __future__ import annotations

SUCCESS = 0
UNINITIALIZED = 1
NOT_SUPPORTED = 3
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
RESET_REQUIRED = 16
ARGUMENT_VERSION_MISMATCH = 25
UNKNOWN = 999

# A call that fails like this will fail the same way next pass: skip it.
PERMANENT = (NOT_SUPPORTED, FUNCTION_NOT_FOUND, ARGUMENT_VERSION_MISMATCH)
# Errors that make the whole GPU unreadable this pass.
GPU_FATAL = (GPU_IS_LOST, RESET_REQUIRED, UNKNOWN)
# NVML is not initialised any more (the driver was unloaded).
SESSION_LOST = (UNINITIALIZED, DRIVER_NOT_LOADED)


class GpuFailed(Exception):
    """Raised inside one GPU's pass when that GPU cannot be read."""

    def __init__(self, code: int):
        self.code = code
