"""MIG slices of one GPU, read through the NVML source's one error wrapper.

NVML's model (nvml.h, "Multi Instance GPU Management"): a MIG-enabled GPU
(``nvmlDeviceGetMigMode`` current mode = NVML_DEVICE_MIG_ENABLE) has up to
``nvmlDeviceGetMaxMigDeviceCount`` MIG devices; ``nvmlDeviceGetMigDeviceHandleByIndex``
answers NOT_FOUND for an index with no device, so every index is tried. A
MIG device handle answers the ordinary device queries for its slice: name
("NVIDIA A100-SXM4-80GB MIG 3g.40gb"), UUID ("MIG-..."), memory and its own
process lists (per-instance lists are the documented way: the parent's
aggregate list may need privileges). GPU and per-process utilisation are not
supported on MIG devices, so a process's SM % there stays None, never 0.

Processes are read per slice, merged into the parent's list and tagged with
their slice's UUID, so everything that walks a GPU's processes sees each once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vramscope.core.samples import GpuProcess, MigSlice
from vramscope.sources.nvml.nvml_errors import NOT_FOUND
from vramscope.sources.nvml.nvml_processes import read_processes

MIG_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE

# "... MIG 3g.40gb" or, for a compute instance smaller than its GPU instance, "... MIG 1c.3g.40gb"
_PROFILE = re.compile(r"\bMIG\s+(\S+)\s*$")


def profile_from_name(name: str | None) -> str | None:
    if not name:
        return None
    m = _PROFILE.search(name)
    return m.group(1) if m else None


@dataclass
class SliceRead:
    """One slice as read this pass, before psutil enrichment."""

    index: int
    uuid: str | None
    name: str | None
    gpu_instance_id: int | None
    compute_instance_id: int | None
    total: int | None
    used: int | None
    free: int | None
    pids: tuple[int, ...]


def read_mig(source, gpu, handle, procs: dict) -> tuple[bool | None, list[SliceRead]]:
    """MIG mode and slices of one GPU; slice processes are merged into ``procs``
    ({pid: [used, kinds, mig_uuid]}). Raises GpuFailed (sources/nvml/nvml_errors.py) on a lost GPU."""
    nvml = source._nvml
    mode = source._gpu_call(gpu, "mig_mode", nvml.nvmlDeviceGetMigMode, handle)
    if mode is None:
        return None, []
    if mode[0] != MIG_ENABLED:
        return False, []
    count = source._gpu_call(gpu, "mig_count", nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
    slices = []
    for index in range(count):
        mig = source._call(None, "mig_handle", nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, index)
        if mig is None:
            if source._last_code == NOT_FOUND:
                continue  # no MIG device at this index
            source._check_fatal(gpu)
            continue
        slices.append(_read_slice(source, gpu, index, mig, procs))
    return True, slices


def _read_slice(source, gpu, index: int, mig, procs: dict) -> SliceRead:
    nvml = source._nvml
    call = source._call
    uuid = text(call(None, "mig_uuid", nvml.nvmlDeviceGetUUID, mig))
    static = gpu.mig_static.get(uuid)
    if static is None:
        name = text(call(None, "mig_name", nvml.nvmlDeviceGetName, mig))
        gi = call(None, "mig_gi", nvml.nvmlDeviceGetGpuInstanceId, mig)
        ci = call(None, "mig_ci", nvml.nvmlDeviceGetComputeInstanceId, mig)
        static = gpu.mig_static[uuid] = (name, gi, ci)
    name, gi, ci = static
    mem = call(None, "mig_memory", nvml.nvmlDeviceGetMemoryInfo, mig)
    total = used = free = None
    if mem is not None:
        total, used, free = mem.total, mem.used, mem.free
    pids = []
    for pid, entry in read_processes(source, gpu, mig).items():
        have = procs.get(pid)
        if have is None:
            procs[pid] = [entry[0], entry[1], uuid]
        else:
            have[2] = uuid
        pids.append(pid)
    return SliceRead(index, uuid, name, gi, ci, total, used, free, tuple(pids))


def build_slices(reads: list[SliceRead], processes: tuple[GpuProcess, ...]) -> tuple[MigSlice, ...]:
    by_pid = {p.pid: p for p in processes}
    reads = sorted(
        reads,
        key=lambda r: (
            r.gpu_instance_id is None,
            r.gpu_instance_id or 0,
            r.compute_instance_id or 0,
            r.index,
        ),
    )
    return tuple(
        MigSlice(
            index=r.index,
            uuid=r.uuid,
            name=r.name,
            profile=profile_from_name(r.name),
            gpu_instance_id=r.gpu_instance_id,
            compute_instance_id=r.compute_instance_id,
            total=r.total,
            used=r.used,
            free=r.free,
            processes=tuple(by_pid[pid] for pid in r.pids if pid in by_pid),
        )
        for r in reads
    )


def text(value) -> str | None:
    """An NVML string (bytes in older pynvml) as str; None stays None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)
