"""What vramscope can and cannot tell under WSL 2, said once, in one place.

The Windows driver (WDDM) that serves the GPU to WSL does not report the
memory of individual processes: NVML lists them with usedGpuMemory "not
available" (NVML reference, nvmlProcessInfo_t). Per-GPU memory, utilisation
and the PyTorch agent's allocator figures are unaffected.
"""

from __future__ import annotations

WSL_NOTICE = (
    "Running under WSL: the Windows driver does not report per-process GPU memory, so processes "
    "show \"memory n/a\". Per-GPU memory and the PyTorch agent's allocated/reserved still work, "
    "and so do the alerts built on them (near-OOM, leak, fragmentation, OOM).")

# Alerts that need each process's device memory, and why they are off under WSL.
OFF_UNDER_WSL = "off under WSL: the Windows driver does not report per-process memory"
