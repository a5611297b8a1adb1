"""Agent samples, steps and events -> the store's series: the one place that says which.

Every writer of agent series goes through here, so the agent panel, the
detectors and the exports read one layout whatever the source:

- the live client (sources/agents/agent_client.py): items pulled from an agent's socket
  or read from its final dump;
- sources whose frames already carry AgentReports -- the demo, a session
  replayed frame by frame (``sources.agent_reports.record_reports``);
- a reopened session (core/session/loader.py): its agent rows and events.

Keys are ``agent_keys.series_key(pid, start_time, device, metric)``:

- per sample and device, at the sample's time: ``allocated``, ``reserved``,
  ``peak_allocated`` (peak since the previous sample) and every bucket
  (``protocol.BUCKETS``); a bucket the sample says nothing of is not written,
  a bucket it says is unknown is a gap (None);
- per step, at the step's time: (``steps``, ``step``), (``steps``,
  ``duration``) and per device ``step_allocated_after`` /
  ``step_peak_allocated``; ``phase_forward`` / ``phase_backward`` /
  ``phase_optimizer`` (``phase_eval``) at the time each phase was read, and
  each phase's peak ``phase_peak_<phase>`` (exact, or a lower bound where
  ``phase_peak_bound_<phase>`` has a point at the same time: its upper bound);
- events: ``loaded`` -> ``phase_loaded`` per device; ``oom`` ->
  ``oom_requested`` on the failing device; ``process_group_init`` and ``compile``
  -> ``event_<kind>`` on the steps pseudo-device (their times).

Qt-free and torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from vramscope.agent.protocol import BUCKETS, PHASES, Bucket, EventKind
from vramscope.core.agent_figures.agent_keys import (
    DEVICE_METRICS,
    OOM_REQUESTED,
    PHASE_LOADED,
    STEP_ALLOCATED_AFTER,
    STEP_PEAK_ALLOCATED,
    STEPS_DEVICE,
    event_metric,
    phase_metric,
    phase_peak_metric,
    series_key,
)
from vramscope.core.samples import AgentDevice

Point = tuple[tuple, float, "int | float | None"]


def _number(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def sample_points(
    pid: int, start_time: float | None, t: float, devices: Iterable[Mapping]
) -> Iterator[Point]:
    """One sample: ``devices`` are mappings with "device", the allocator figures and
    "buckets" (the wire format of a sample's devices)."""
    for dev in devices:
        name = str(dev["device"])
        for metric in DEVICE_METRICS:
            if metric in dev:
                yield series_key(pid, start_time, name, metric), t, dev[metric]
        buckets = dev.get("buckets")
        if isinstance(buckets, Mapping):
            for bucket in BUCKETS:
                if bucket in buckets:
                    yield series_key(pid, start_time, name, bucket), t, buckets[bucket]


def device_points(
    pid: int, start_time: float | None, t: float, devices: Iterable[AgentDevice]
) -> Iterator[Point]:
    """One sample's devices as the monitor holds them (decoded items, the demo's and
    replayed sessions' reports). A figure a non-CUDA device does not give (the CPU has
    no allocator) and a bucket the monitor has not worked out yet (outside PyTorch,
    added at the frame's time) are no points, not gaps."""
    for d in devices:
        fields: dict = {"device": d.device}
        for metric in DEVICE_METRICS:
            value = getattr(d, metric)
            if value is not None or d.device.startswith("cuda"):
                fields[metric] = value
        if d.buckets is not None:
            fields["buckets"] = {
                k: v for k, v in d.buckets.as_dict().items() if v is not None or k != Bucket.OUTSIDE_PYTORCH
            }
        yield from sample_points(pid, start_time, t, (fields,))


def step_points(pid: int, start_time: float | None, t: float, step: Mapping) -> Iterator[Point]:
    """One step: a step item from the agent, or the data of a "step" event (same fields:
    step, duration, devices {name: {allocated_after, peak_allocated}}, phases, phase_times)."""
    yield series_key(pid, start_time, STEPS_DEVICE, "duration"), t, step.get("duration")
    yield series_key(pid, start_time, STEPS_DEVICE, "step"), t, step.get("step")
    devices = step.get("devices")
    for name, f in devices.items() if isinstance(devices, Mapping) else ():
        if isinstance(f, Mapping):
            yield series_key(pid, start_time, str(name), STEP_PEAK_ALLOCATED), t, f.get("peak_allocated")
            yield series_key(pid, start_time, str(name), STEP_ALLOCATED_AFTER), t, f.get("allocated_after")
    phases = step.get("phases")
    times = step.get("phase_times")
    times = times if isinstance(times, Mapping) else {}
    for name, per in phases.items() if isinstance(phases, Mapping) else ():
        if not isinstance(per, Mapping):
            continue
        for phase in PHASES:
            value = per.get(phase)
            if value is None:
                continue  # a step whose phases were not measured: no point, not a gap
            when = times.get(phase)
            yield (
                series_key(pid, start_time, str(name), phase_metric(phase)),
                float(when) if isinstance(when, (int, float)) else t,
                value,
            )
    peaks = step.get("phase_peaks")
    for name, per in peaks.items() if isinstance(peaks, Mapping) else ():
        for phase, pair in per.items() if isinstance(per, Mapping) else ():
            if phase not in PHASES or not isinstance(pair, (list, tuple)) or len(pair) != 2:
                continue
            peak, bound = pair
            if not (_number(peak) and _number(bound)) or peak is None:
                continue
            when = times.get(phase)
            when = float(when) if isinstance(when, (int, float)) else t
            yield series_key(pid, start_time, str(name), phase_peak_metric(phase)), when, peak
            if bound is not None:  # (no point where the peak is exact)
                yield series_key(pid, start_time, str(name), phase_peak_metric(phase, True)), when, bound


def event_points(pid: int, start_time: float | None, kind: str, t: float, data: Mapping) -> Iterator[Point]:
    if kind == EventKind.STEP:
        yield from step_points(pid, start_time, t, data)
    elif kind == EventKind.LOADED:
        for name, value in (data.get("devices") or {}).items():
            yield series_key(pid, start_time, str(name), PHASE_LOADED), t, value
    elif kind == EventKind.OOM:
        yield (
            series_key(pid, start_time, data.get("device") or "cuda", OOM_REQUESTED),
            t,
            data.get("requested"),
        )
    elif kind in (
        EventKind.PROCESS_GROUP_INIT,
        EventKind.COMPILE,
    ):  # core/agent_figures/outside_story.py pairs them
        yield series_key(pid, start_time, STEPS_DEVICE, event_metric(kind)), t, 1


def record(store, points: Iterable[Point]) -> None:
    """Write points into a Store; values that are not numbers are skipped."""
    for key, t, value in points:
        if _number(value):
            store.record(key, t, value)
