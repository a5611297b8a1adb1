"""Leak: allocated memory after each optimizer step creeping up.

After an optimizer step only the fixed cost (weights, gradients, optimizer
state) should be live, so "allocated after step" is flat in a healthy run.
The PyTorch FAQ names the usual cause ("Don't accumulate history across your
training loop", pytorch.org/docs/stable/notes/faq.html): ``losses.append(loss)``
keeps each step's graph alive; use ``.item()`` or ``.detach()``. It grows
slowly and ends in an OOM hundreds of steps later. The slope is Theil-Sen over the last K steps, so
one spike (a long batch, an eval) is not a leak.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from statistics import median

from vramscope.core.detectors.agentmap import device_named, gpu_for_device, headroom
from vramscope.core.detectors.alert import CRITICAL, WARNING, Alert
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.detectors.trend import theil_sen
from vramscope.core.samples import Frame
from vramscope.core.units import MiB, fmt_bytes, fmt_duration

LEAK_FIX = (
    "Allocated memory after an optimizer step should come back to the same level; a steady "
    "rise means tensors from earlier steps are kept alive, usually a loss or output kept "
    "with its computation graph. losses.append(loss) retains the whole graph: append "
    "loss.item() (or loss.detach()) instead, and look for other tensors collected across "
    "steps (metrics, outputs, hidden states).")


@dataclass
class _LeakState:
    last_seen: float
    points: deque = field(default_factory=deque)  # (step, allocated_after, time, duration)
    last_step: float | None = None
    flagged_since: float | None = None
    counter: int = 0


class LeakRule:
    def __init__(self):
        self._state: dict[tuple, _LeakState] = {}

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        k = max(3, settings.leak_steps)
        alerts = []
        for report in frame.agents:
            for ev in report.events:
                if ev.kind != "step":
                    continue
                after = ev.data.get("allocated_after")
                if after is None:
                    continue
                dev = device_named(report, ev.data.get("device"))
                key = (report.identity, dev.device if dev is not None else ev.data.get("device"))
                st = self._state.get(key)
                if st is None:
                    st = self._state[key] = _LeakState(last_seen=now)
                st.counter += 1
                step = ev.data.get("step", st.counter)
                if st.last_step is not None and step <= st.last_step:
                    if step < st.last_step - 1:  # step counter went back: a new run/epoch count
                        st.points.clear()
                    else:
                        continue  # duplicate delivery
                st.last_step = step
                st.points.append((step, after, ev.time, ev.data.get("duration")))
                while len(st.points) > k:
                    st.points.popleft()
            for key, st in self._state.items():
                if key[0] != report.identity:
                    continue
                st.last_seen = now
                if not report.connected:
                    continue
                alert = self._judge(frame, report, key[1], st, now, settings, k)
                if alert is not None:
                    alerts.append(alert)
        forget_stale(self._state, now, settings)
        return alerts

    def _judge(self, frame, report, device_name, st: _LeakState, now, settings, k) -> Alert | None:
        if len(st.points) < k:
            st.flagged_since = None
            return None
        steps = [p[0] for p in st.points]
        values = [p[1] for p in st.points]
        slope, agreement = theil_sen(steps, values)
        if slope is None or slope < settings.leak_min_slope_bytes or agreement < settings.leak_min_agreement:
            st.flagged_since = None
            return None
        if st.flagged_since is None:
            st.flagged_since = st.points[0][2]
        dev = device_named(report, device_name)
        gpu = gpu_for_device(frame, report, dev)
        room = headroom(gpu, dev)
        steps_to_oom = int(room / slope) if room is not None else None
        durations = [p[3] for p in st.points if p[3]]
        step_s = median(durations) if durations else None
        eta = steps_to_oom * step_s if (steps_to_oom is not None and step_s) else None
        severity = WARNING
        if eta is not None and eta < settings.near_oom_horizon_minutes * 60:
            severity = CRITICAL
        evidence = [
            f"allocated after step {steps[0]}: {fmt_bytes(values[0])}; "
            f"after step {steps[-1]}: {fmt_bytes(values[-1])}",
            f"robust (Theil-Sen) slope over the last {len(steps)} steps: "
            f"+{slope / MiB:.1f} MiB/step; {agreement:.0%} of step pairs rise",
        ]
        if room is not None:
            evidence.append(f"headroom {fmt_bytes(room)} (free on {gpu.label} + this process's "
                            f"cache) -> out of memory in about {steps_to_oom} steps"
                            + (f" (~{fmt_duration(eta)} at {step_s:.2f} s/step)" if eta is not None else ""))
        else:
            evidence.append("headroom unknown (GPU not matched), so no OOM projection")
        return Alert(
            kind="leak", severity=severity,
            gpu=gpu.index if gpu is not None else None, pid=report.pid,
            start_time=report.start_time, since=st.flagged_since,
            message=(f"pid {report.pid} {device_name or ''}: allocated after each step grows "
                     f"{slope / MiB:.1f} MiB/step"
                     + (f"; out of memory in ~{steps_to_oom} steps" if steps_to_oom is not None else "")),
            evidence=tuple(evidence), fix=LEAK_FIX, device=device_name,
            data={"slope_bytes_per_step": slope, "agreement": agreement,
                  "steps_to_oom": steps_to_oom, "seconds_to_oom": eta,
                  "window": [int(steps[0]), int(steps[-1])]},
        )
