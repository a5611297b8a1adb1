"""Helpers shared by the rules that read PyTorch agent reports."""

from __future__ import annotations

from collections.abc import Mapping

from vramscope.core.samples import (
    AgentDevice,
    AgentReport,
    Frame,
    GpuSample,
    MigSlice,
    bare_uuid,
)


def slice_for_device(frame: Frame, device: AgentDevice | None) -> tuple[GpuSample, MigSlice] | None:
    """The MIG slice an agent device is (CUDA_VISIBLE_DEVICES=MIG-...), with its GPU."""
    uuid = bare_uuid(device.gpu_uuid) if isinstance(device, AgentDevice) else None
    if uuid is None:
        return None
    for gpu in frame.gpus:
        for mig in gpu.slices:
            if bare_uuid(mig.uuid) == uuid:
                return gpu, mig
    return None


def gpu_for_device(frame: Frame, report: AgentReport, device: AgentDevice | str | None) -> GpuSample | None:
    """The NVML GPU an agent device is on: by UUID (the GPU's, or one of its MIG
    slices'), else the only GPU listing the PID.

    "cuda:N" is never trusted as an NVML index (CUDA_VISIBLE_DEVICES renumbers).
    """
    uuid = bare_uuid(device.gpu_uuid) if isinstance(device, AgentDevice) else None
    if uuid:
        for gpu in frame.gpus:
            if bare_uuid(gpu.uuid) == uuid:
                return gpu
        on_slice = slice_for_device(frame, device) if isinstance(device, AgentDevice) else None
        if on_slice is not None:
            gpu, mig = on_slice
            return gpu.slice_view(mig)  # headroom and trends are the slice's
    name = device.device if isinstance(device, AgentDevice) else device
    if name is not None and not str(name).startswith("cuda"):
        return None
    holding = [g for g in frame.gpus if any(p.pid == report.pid for p in g.processes)]
    if len(holding) == 1:
        return holding[0]
    return None


def cuda_devices(report: AgentReport) -> list[AgentDevice]:
    return [d for d in report.devices if str(d.device).startswith("cuda")]


def device_named(report: AgentReport, name: str | None) -> AgentDevice | None:
    devices = cuda_devices(report)
    if name is not None:
        for d in report.devices:
            if d.device == name:
                return d
    return devices[0] if devices else None


def headroom(gpu: GpuSample | None, dev: AgentDevice | None) -> int | None:
    """Bytes this process can still allocate: free on the GPU plus its own cache."""
    if gpu is None:
        return None
    free = gpu.free
    if free is None and gpu.total is not None and gpu.used is not None:
        free = gpu.total - gpu.used
    if free is None:
        return None
    cached = 0
    if dev is not None and dev.reserved is not None and dev.allocated is not None:
        cached = max(0, dev.reserved - dev.allocated)
    return max(0, free) + cached


def expandable_segments(settings: Mapping[str, object] | None) -> bool | None:
    """Whether the agent says expandable_segments is on; None when it did not say.

    Accepts {"expandable_segments": True} or a PYTORCH_CUDA_ALLOC_CONF string
    ("expandable_segments:True,max_split_size_mb:128") under any key.
    """
    if not settings:
        return None
    for key, value in settings.items():
        if str(key).lower() == "expandable_segments":
            return _truthy(value)
    found_conf = False
    for key, value in settings.items():
        if isinstance(value, str) and ("expandable_segments" in value or "ALLOC_CONF" in str(key).upper()):
            found_conf = True
            for part in value.replace(";", ",").split(","):
                name, _, val = part.partition(":")
                if name.strip().lower() == "expandable_segments":
                    return _truthy(val.strip())
        elif "ALLOC_CONF" in str(key).upper():
            found_conf = True
    return False if found_conf else None


def _truthy(v: object) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes", "on")
    return bool(v)


def device_label(frame: Frame | None, report: AgentReport, device: AgentDevice) -> str:
    """'cuda:0 (GPU 1)': torch's device and the GPU it is, as the monitor numbers
    GPUs (NVML's index; cuda:N counts only what CUDA_VISIBLE_DEVICES lets through)."""
    gpu = gpu_for_device(frame, report, device) if frame is not None else None
    if gpu is None or not device.device.startswith("cuda"):
        return device.device
    return f"{device.device} ({gpu.label})"
