"""NVIDIA GPUs through NVML (nvidia-ml-py): the source that turns one NVML pass into a
frozen Frame (nvml_source), each GPU's own figures (nvml_device), its error codes, MIG
slices, per-process lists read without an object per entry, and the NVIDIA-only facts
beside them (/dev/nvidia* holders, PCI power state, WSL 2). May import the standard
library, pynvml, psutil, vramscope.core and the cross-cutting modules at the top of
vramscope.sources (processes, proc_stat, host_usage, containers, unified); never Qt,
never another backend's package.
"""
