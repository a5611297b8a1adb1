"""Hand-built frames for the diagnostics tests: a clock, GPUs, processes, agents."""

from __future__ import annotations

from vramscope.core.samples import (
    AgentBuckets,
    AgentDevice,
    AgentEvent,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
    ProcessInfo,
)
from vramscope.core.units import GiB, MiB

T0 = 1_700_000_000.0
UUID = "GPU-00000000-0000-0000-0000-000000000000"


def proc(
    pid,
    used,
    sm=None,
    cmd=("python", "train.py"),
    user="alice",
    start=T0 - 3600,
    parent_alive=True,
    status="sleeping",
    visibility="ok",
    ppid=1000,
    has_agent=False,
):
    info = ProcessInfo(
        pid=pid,
        start_time=start,
        user=user,
        name=cmd[0] if cmd else None,
        cmdline=tuple(cmd) if cmd else None,
        ppid=ppid,
        status=status,
        visibility=visibility,
        parent_alive=parent_alive,
    )
    return GpuProcess(pid=pid, used=used, sm=sm, info=info, has_agent=has_agent)


def gpu(processes=(), total=24 * GiB, used=None, util=None, index=0, free=None, uuid=UUID):
    if used is None:
        used = sum(p.used or 0 for p in processes) + 300 * MiB
    return GpuSample(
        index=index,
        name="Fake RTX 4090",
        uuid=uuid,
        total=total,
        used=used,
        free=total - used if free is None else free,
        util_gpu=util,
        processes=tuple(processes),
    )


def frame(t, gpus=(), agents=()):
    return Frame(time=T0 + t, gpus=tuple(gpus), source="test", agents=tuple(agents))


def device(allocated, reserved, inactive_split=0, retries=0, peak=None, buckets=None, uuid=UUID):
    return AgentDevice(
        device="cuda:0",
        gpu_uuid=uuid,
        allocated=allocated,
        reserved=reserved,
        inactive_split=inactive_split,
        num_alloc_retries=retries,
        peak_allocated=peak if peak is not None else allocated,
        buckets=buckets,
    )


def agent(pid, devices, events=(), start=T0 - 3600, settings=None, t=0.0):
    return AgentReport(
        pid=pid,
        start_time=start,
        time=T0 + t,
        devices=tuple(devices),
        events=tuple(events),
        allocator_settings=dict(settings or {}),
    )


def step(k, after, t, peak=None, duration=1.0):
    return AgentEvent(
        "step",
        T0 + t,
        {"step": k, "allocated_after": after, "peak_allocated": peak or after + GiB, "duration": duration},
    )


def buckets(weights, gradients, optimizer_state, other, cached):
    return AgentBuckets(
        weights=weights,
        gradients=gradients,
        optimizer_state=optimizer_state,
        other_allocated=other,
        cached_free=cached,
    )


__all__ = [
    "T0",
    "UUID",
    "GiB",
    "MiB",
    "proc",
    "gpu",
    "frame",
    "device",
    "agent",
    "step",
    "buckets",
    "AgentEvent",
]
