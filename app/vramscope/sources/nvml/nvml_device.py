"""One NVIDIA GPU's own figures, through the NVML source's error wrapper
(sources/nvml/nvml_source.py ``_call`` / ``_gpu_call``), and what the source
keeps of each GPU between passes (``GpuState``).

Static facts (name, UUID, PCI bus id) are read once per GPU, again after it
was lost. Memory through ``nvmlDeviceGetMemoryInfo(handle, version=nvmlMemory_v2)``
(driver-reserved memory reported separately); where the driver lacks it, v1,
with ``reserved`` None; where neither is supported (a unified-memory board:
GB10, Jetson) the system's memory pool, marked (sources/machine/unified.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vramscope.core.samples import NVIDIA, UNIFIED_MEMORY, GpuSample
from vramscope.sources.nvml.nvml_errors import NOT_SUPPORTED, UNKNOWN, GpuFailed
from vramscope.sources.nvml.nvml_mig import text as _text
from vramscope.sources.machine.unified import POOL_NOTE, system_pool


@dataclass
class GpuState:
    """What the source keeps of one GPU between passes."""

    index: int
    handle: object = None
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    skip: set = field(default_factory=set)  # calls this GPU does not support
    util_last_seen: int = 0  # µs timestamp of the newest process sample
    sm: dict = field(default_factory=dict)  # pid -> SM % of its newest sample
    sm_time: dict = field(default_factory=dict)  # pid -> that sample's timestamp (µs)
    errors: dict = field(default_factory=dict)  # call name -> NVML error code
    failed: bool = False  # lost (or fatal) on the previous pass
    # the previous pass's processes (sources/nvml/nvml_processes.py): pid -> (entry, host figures,
    # GpuProcess); what they were made from (pids, entries, host figures); the tuple given
    last_procs: dict = field(default_factory=dict)
    last_seen: tuple | None = None
    last_tuple: tuple = ()
    last_sample: tuple | None = None  # (the fields it was made from, GpuSample)
    mig_static: dict = field(default_factory=dict)  # MIG uuid -> (name, gi id, ci id)
    slice_reads: list = field(default_factory=list)  # this pass's MIG slices (nvml_mig.SliceRead)


def read_device(source, gpu: GpuState) -> dict:
    """The GpuSample's fields but its processes, slices and MIG mode (GpuFailed for a lost GPU)."""
    nvml = source._nvml
    if gpu.failed or gpu.handle is None:
        if gpu.failed:  # it answered again: read everything afresh
            gpu.skip.clear()
            gpu.sm.clear()
            gpu.sm_time.clear()
        handle = source._call(gpu, "handle", nvml.nvmlDeviceGetHandleByIndex, gpu.index)
        if handle is None:
            raise GpuFailed(source._last_code or UNKNOWN)
        gpu.handle = handle
        gpu.name = source._gpu_call(gpu, "name", nvml.nvmlDeviceGetName, handle)
        gpu.uuid = source._gpu_call(gpu, "uuid", nvml.nvmlDeviceGetUUID, handle)
        pci = source._gpu_call(gpu, "pci", nvml.nvmlDeviceGetPciInfo, handle)
        gpu.pci_bus_id = _text(pci.busId) if pci is not None else None
    handle = gpu.handle

    total = used = free = reserved = None
    mem = None
    # v2 unless the driver said it lacks it (then "memory_v2" is in gpu.skip)
    mem = source._gpu_call(gpu, "memory_v2", nvml.nvmlDeviceGetMemoryInfo, handle, version=nvml.nvmlMemory_v2)
    if mem is not None:
        reserved = mem.reserved
    else:
        mem = source._gpu_call(gpu, "memory", nvml.nvmlDeviceGetMemoryInfo, handle)
    memory_kind = None
    if mem is not None:
        total, used, free = mem.total, mem.used, mem.free
    elif gpu.errors.get("memory") == NOT_SUPPORTED:  # a unified-memory board (GB10, Jetson)
        pool = system_pool()
        memory_kind = UNIFIED_MEMORY
        if pool is not None:
            total, used, free = pool

    util = source._gpu_call(gpu, "utilization", nvml.nvmlDeviceGetUtilizationRates, handle)
    temperature = _temperature(source, gpu, handle)
    power = source._gpu_call(gpu, "power", nvml.nvmlDeviceGetPowerUsage, handle)
    limit = source._gpu_call(gpu, "power_limit", nvml.nvmlDeviceGetEnforcedPowerLimit, handle)

    return dict(
        index=gpu.index,
        name=gpu.name,
        uuid=gpu.uuid,
        pci_bus_id=gpu.pci_bus_id,
        total=total,
        used=used,
        free=free,
        reserved=reserved,
        util_gpu=None if util is None else util.gpu,
        util_memory=None if util is None else util.memory,
        temperature=temperature,
        power_w=None if power is None else power / 1000.0,
        power_limit_w=None if limit is None else limit / 1000.0,
        vendor=NVIDIA,
        memory_kind=memory_kind,
        not_reported=((("total", POOL_NOTE),) if memory_kind else ()),
    )


def _temperature(source, gpu: GpuState, handle):
    nvml = source._nvml
    get_v = getattr(nvml, "nvmlDeviceGetTemperatureV", None)
    if get_v is not None and "temperature_v" not in gpu.skip:
        value = source._gpu_call(gpu, "temperature_v", get_v, handle, nvml.NVML_TEMPERATURE_GPU)
        if value is not None or "temperature_v" not in gpu.skip:
            return value
    return source._gpu_call(
        gpu, "temperature", nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU
    )


def sample_of(gpu: GpuState, figures: dict) -> GpuSample:
    """The GPU's sample: the previous pass's again when every figure is the same."""
    last = gpu.last_sample
    if (
        last is not None
        and last[1].processes is figures.get("processes", ())  # (a changed tuple: no slow compare)
        and last[0] == figures
    ):
        return last[1]
    sample = GpuSample(**figures)
    gpu.last_sample = (figures, sample)
    return sample
