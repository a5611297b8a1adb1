"""What the monitor reports of an agent: AgentReports from the client's state,
the bucket outside PyTorch from NVML's figure, and series for sources whose
frames already carry reports (the demo, replayed sessions).

The client (sources/agents/agent_client.py) keeps each agent's state from what it pulled
(checked by sources/agents/agent_input.py); this module turns that state into the
frozen values the frame carries.
"""

from __future__ import annotations

import dataclasses

from vramscope.agent.protocol import Bucket
from vramscope.core.agent_figures import agent_series
from vramscope.core.samples import (
    AGENT_ENDED,
    SAMPLES_PER_REPORT,
    AgentReport,
    AgentSamplePoint,
    Frame,
    bare_uuid,
)


def _norm_uuid(uuid: str | None) -> str | None:
    return bare_uuid(uuid)


def merged_peak(before: tuple | None, dev) -> tuple:
    """(peak, upper bound or None) over a run of samples, ``dev`` (an AgentDevice)
    the next: the highest peak, exact unless some sample's was a lower bound --
    then the highest upper bound bounds it. A sample without a peak adds nothing."""
    peak, bound = dev.peak_allocated, dev.peak_allocated_bound
    if before is None or peak is None:
        return (peak, bound) if before is None else before
    if before[0] is None:
        return peak, bound
    top = max(before[0], peak)
    if before[1] is None and bound is None:
        return top, None
    return top, max(before[1] if before[1] is not None else before[0], bound if bound is not None else peak)


def _interval_peaks(devices: tuple, peaks: dict) -> tuple:
    """The devices of the newest sample with the peaks of every sample since the last report."""
    out = []
    for dev in devices:
        merged = peaks.get(dev.device)
        if merged is not None and merged != (dev.peak_allocated, dev.peak_allocated_bound):
            dev = dataclasses.replace(dev, peak_allocated=merged[0], peak_allocated_bound=merged[1])
        out.append(dev)
    return tuple(out)


def report_of(state) -> AgentReport:
    """The AgentReport of one agent's state (sources/agents/agent_state.py's ``AgentState``): the
    newest sample's figures, with each device's peak over every sample since the
    previous report (the frame's whole interval)."""
    hello, sample = state.hello, state.latest
    error = state.error
    if error is None and state.ended_at is not None:
        error = AGENT_ENDED
    return AgentReport(
        pid=state.pid,
        start_time=state.start_time,
        hostname=hello.hostname,
        time=sample.t if sample else None,
        samples=tuple(AgentSamplePoint(s.t, s.step, s.devices) for s in state.since_report),
        rank=hello.rank,
        local_rank=hello.local_rank,
        world_size=hello.world_size,
        step=state.step,
        devices=_interval_peaks(sample.devices, state.peaks) if sample else (),
        allocator_settings=dict(sample.settings) if sample else {},
        events=tuple(state.new_events),
        connected=state.ended_at is None and state.conn is not None,
        error=error,
        recent_events=tuple(state.recent),
        dropped=state.dropped,
        models=sample.models if sample else (),
        phases_measured=sample.phases_measured if sample else None,
        modules=tuple(m for figures in getattr(state, "modules", {}).values() for m in figures),
        measured_input=sample.input if sample else None,
        rendezvous=hello.rendezvous,
        sharded=sample.sharded if sample else None,
        allocator=state.allocator,
    )


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
    new_dev = dataclasses.replace(
        target, buckets=dataclasses.replace(target.buckets, outside_pytorch=outside)
    )
    return dataclasses.replace(report, devices=tuple(new_dev if d is target else d for d in report.devices))


def record_reports(store, frame: Frame, seen: dict | None = None) -> Frame:
    """Series for sources whose frames already carry AgentReports (demo, replayed
    sessions, the window's sampler process, other machines).

    A report that carries its samples (``AgentReport.samples``: a live client's,
    through a sampler's stream) has each recorded at its own time with its own
    figures, as the live client records them, and outside PyTorch at the frame's
    time; one that does not (the demo, a replayed session) has its newest recorded
    at that sample's time (the report's ``time``; the frame's where it has none).
    Each once: ``seen`` (agent identity -> the sample time recorded last) keeps a
    sample from being drawn again at the next frame. Steps and OOMs come from the
    report's new events, through the same module (core/agent_figures/agent_series.py),
    so the agent panel reads one layout whatever the source.
    """
    for r in frame.agents:
        last = seen.get(r.identity) if seen is not None else None
        if r.samples:
            # (another machine's stream is input: at most a report's worth, in time order)
            fresh = sorted(
                (s for s in r.samples[-SAMPLES_PER_REPORT:] if last is None or s.time > last),
                key=lambda s: s.time,
            )
            for s in fresh:
                agent_series.record(store, agent_series.device_points(r.pid, r.start_time, s.time, s.devices))
            agent_series.record(store, outside_points(r, frame.time))
            t = fresh[-1].time if fresh else last
        else:
            t = r.time if r.time is not None else frame.time
            if last != t:  # not the sample recorded last frame
                agent_series.record(store, agent_series.device_points(r.pid, r.start_time, t, r.devices))
        if seen is not None and t is not None:
            seen[r.identity] = t
        for ev in r.events:
            agent_series.record(
                store, agent_series.event_points(r.pid, r.start_time, ev.kind, ev.time, ev.data)
            )
    return frame


def outside_points(report: AgentReport, t: float):
    """The monitor's bucket, outside PyTorch, of a report's devices that have it, at ``t``
    (the frame's time)."""
    return agent_series.sample_points(
        report.pid,
        report.start_time,
        t,
        [
            {"device": d.device, "buckets": {Bucket.OUTSIDE_PYTORCH: d.buckets.outside_pytorch}}
            for d in report.devices
            if d.buckets is not None and d.buckets.outside_pytorch is not None
        ],
    )
