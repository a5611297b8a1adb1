"""What vramscope can and cannot tell under WSL 2, said once, in one place.

The Windows driver (WDDM) that serves the GPU to WSL does not report the
memory of individual processes: NVML lists them with usedGpuMemory "not
available" (NVML reference, nvmlProcessInfo_t). Per-GPU memory, utilisation
and the PyTorch agent's allocator figures are unaffected.
"""

from __future__ import annotations

WSL_NOTICE = (
    "Running under WSL: the Windows driver does not report per-process GPU memory, so processes "
    'show "memory n/a". Per-GPU memory and the PyTorch agent\'s allocated/reserved still work, '
    "and so do the alerts built on them (near-OOM, leak, fragmentation, OOM)."
)

WHY_OFF = "the Windows driver does not report per-process memory under WSL"
# alerts that need each process's device memory: off under WSL
OFF_UNDER_WSL = (
    "squatter",
    "per-process growth",
    "memory without a visible owner",
    "memory held for a process that no longer exists",
)
# alerts that still work: they read the GPU's memory or the PyTorch agent's allocator
ON_UNDER_WSL = (
    "near out of memory (the GPU's free memory)",
    "leak, fragmentation, OOM, eval with autograd, checkpointing (the PyTorch agent)",
)
