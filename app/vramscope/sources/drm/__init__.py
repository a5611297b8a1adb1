"""AMD and Intel GPUs through the kernel's DRM interfaces: per-process memory from
/proc/PID/fdinfo (with kcmp to count a shared file once), the cards' sysfs figures,
ROCm compute processes from KFD, bounded number parsing, PCI marketing names, and the
source (drm_source) that joins them into frozen GpuSamples. May import the standard
library, vramscope.core and the cross-cutting modules at the top of vramscope.sources
(processes, proc_stat, host_usage, unified); never Qt, never pynvml or the nvml package.
"""
