"""Is this Linux running under WSL 2 (Windows Subsystem for Linux)?

Under WSL the GPU is the Windows driver's (WDDM), reached through /dev/dxg;
NVML works, but the Windows driver does not report per-process memory, so
every process's ``usedGpuMemory`` is NVML_VALUE_NOT_AVAILABLE. Detection
follows Microsoft's documented signs: the kernel version string names
Microsoft (``/proc/version``: "...-microsoft-standard-WSL2"), and the
paravirtualised GPU device ``/dev/dxg`` exists.
"""

from __future__ import annotations

import pathlib

PROC_VERSION = "/proc/version"
DXG = "/dev/dxg"


def running_under_wsl(proc_version: str = PROC_VERSION, dxg: str = DXG) -> bool:
    """True when /proc/version names Microsoft AND /dev/dxg exists (the GPU is WSL's)."""
    try:
        text = pathlib.Path(proc_version).read_text(errors="replace")[:4096]
    except OSError:
        return False
    return "microsoft" in text.lower() and pathlib.Path(dxg).exists()
