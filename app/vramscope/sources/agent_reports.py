"""What the monitor reports of an agent: AgentReports from the client's state,
the bucket outside PyTorch from NVML's figure, and series for sources whose
frames already carry reports (the demo, replayed sessions).

The client (sources/agents.py) keeps each agent's state from what it pulled
(checked by sources/agent_input.py); this module turns that state into the
frozen values the frame carries.
"""

from __future__ import annotations

import dataclasses

from vramscope.agent.protocol import AGENT_BUCKETS, DEVICE_METRICS, PEAK_BOUND, PHASES_MEASURED
from vramscope.core import agent_series
from vramscope.core.samples import (
    AGENT_ENDED, AgentBuckets, AgentDevice, AgentReport, Frame, bare_uuid,
)


def _norm_uuid(uuid: str | None) -> str | None:
    return bare_uuid(uuid)


def report_of(state) -> AgentReport:
    """The AgentReport of one agent's state (sources/agents.py's ``_Agent``)."""
    hello = state.hello
    sample = state.latest or {}
    devices = []
    for dev in sample.get("devices") or ():
        b = dev.get("buckets")
        note = dev.get("buckets_note")
        buckets = AgentBuckets(**{k: _int(b.get(k)) for k in AGENT_BUCKETS},
                               note=note if isinstance(note, str) else None) if isinstance(b, dict) else None
        devices.append(AgentDevice(
            device=str(dev.get("device")), gpu_uuid=dev.get("uuid"),
            allocated=_int(dev.get("allocated")), reserved=_int(dev.get("reserved")),
            active=_int(dev.get("active")), inactive_split=_int(dev.get("inactive_split")),
            requested=_int(dev.get("requested")), peak_allocated=_int(dev.get("peak_allocated")),
            peak_allocated_bound=_int(dev.get(PEAK_BOUND)),
            num_alloc_retries=_int(dev.get("num_alloc_retries")), num_ooms=_int(dev.get("num_ooms")),
            alloc_count=_int(dev.get("alloc_count")), free_count=_int(dev.get("free_count")),
            buckets=buckets, total=_int(dev.get("total")),
            runtime=dev["runtime"] if isinstance(dev.get("runtime"), str) else None,
            missing=tuple(str(m) for m in dev.get("missing") or () if isinstance(m, str))))
    error = state.error
    if error is None and state.ended_at is not None:
        error = AGENT_ENDED
    return AgentReport(
        pid=state.pid, start_time=state.start_time, hostname=hello.get("hostname"),
        time=sample.get("t"), rank=hello.get("rank"), local_rank=hello.get("local_rank"),
        world_size=hello.get("world_size"), step=state.step, devices=tuple(devices),
        allocator_settings=dict(sample.get("settings") or {}), events=tuple(state.new_events),
        connected=state.ended_at is None and state.conn is not None, error=error,
        recent_events=tuple(state.recent), dropped=state.dropped,
        models=tuple(m for m in (sample.get("models") or ()) if isinstance(m, dict)),
        phases_measured=_share((sample.get("agent") or {}).get(PHASES_MEASURED)),
        allocator=state.allocator)


def _share(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 else None


def _int(v) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def with_outside(report: AgentReport, gpu, proc, all_gpus) -> AgentReport:
    """outside PyTorch = NVML process memory - reserved, on the device that is this GPU."""
    cuda = [d for d in report.devices if d.device.startswith(("cuda", "xpu"))]
    target = None
    # the device is this GPU, or the MIG slice of it the process runs on
    here = {_norm_uuid(gpu.uuid), _norm_uuid(proc.mig_uuid)} - {None}
    for d in cuda:
        if _norm_uuid(d.gpu_uuid) in here:
            target = d
    if target is None and len(cuda) == 1:
        known = {_norm_uuid(u) for g in all_gpus for u in (g.uuid, *(s.uuid for s in g.slices)) if u}
        if _norm_uuid(cuda[0].gpu_uuid) not in known:  # torch gave no usable uuid: one device, one GPU
            on = [g for g in all_gpus if any(p.pid == proc.pid for p in g.processes)]
            if len(on) == 1:
                target = cuda[0]
    if target is None or proc.used is None or target.reserved is None or target.buckets is None:
        return report
    outside = max(0, proc.used - target.reserved)
    new_dev = dataclasses.replace(target, buckets=dataclasses.replace(target.buckets, outside_pytorch=outside))
    return dataclasses.replace(report, devices=tuple(new_dev if d is target else d for d in report.devices))


def _device_fields(d: AgentDevice) -> dict:
    """An AgentDevice in the wire format of a sample's device (a CPU device's unknown
    allocator figures are left out: they are not gaps, the CPU has no allocator)."""
    out: dict = {"device": d.device}
    for metric in DEVICE_METRICS:
        value = getattr(d, metric)
        if value is not None or d.device.startswith("cuda"):
            out[metric] = value
    if d.buckets is not None:
        out["buckets"] = d.buckets.as_dict()
    if d.runtime is not None:
        out["runtime"] = d.runtime
    if d.missing:
        out["missing"] = list(d.missing)
    return out


def record_reports(store, frame: Frame) -> Frame:
    """Series for sources whose frames already carry AgentReports (demo, replayed sessions).

    The live client records every pulled sample at its own time; a source
    that only has the latest report per frame records it at the frame's time
    here (steps and OOMs from the report's new events), through the same
    module (core/agent_series.py), so the agent panel reads one layout
    whatever the source.
    """
    for r in frame.agents:
        agent_series.record(store, agent_series.sample_points(
            r.pid, r.start_time, frame.time, [_device_fields(d) for d in r.devices]))
        for ev in r.events:
            agent_series.record(store, agent_series.event_points(r.pid, r.start_time, ev.kind, ev.time,
                                                                 ev.data))
    return frame
