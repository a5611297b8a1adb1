"""Eval with autograd on: forward passes in eval mode while grad is enabled.

PyTorch's autograd notes ("Locally disabling gradient computation",
pytorch.org/docs/stable/notes/autograd.html): model.eval() only switches
modules such as Dropout and BatchNorm and does not stop graph building; without
torch.no_grad() / torch.inference_mode() an eval loop keeps activations alive,
so validation can take more than training. The agent
reports such forward passes ("eval_autograd" events); this rule flags them
when they coincide with memory growth.

Forward passes in eval mode followed by optimizer steps are training, not
evaluation: fine-tuning with Dropout off (model.eval() during training) is
legitimate. So eval forwards count only from the last optimizer step on, and
only once no step has come for a while (``STEP_QUIET_STEPS`` of the run's own
step time, at least ``STEP_QUIET_SECONDS``): an evaluation loop runs many
forwards and no step.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field

from vramscope.agent.protocol import EventKind
from vramscope.core.detectors.agentmap import device_named, gpu_for_device
from vramscope.core.detectors.alert import WARNING, Alert, AlertKind
from vramscope.core.detectors.naming import process_name
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.samples import Frame
from vramscope.core.units import fmt_bytes

EVAL_FIX = (
    "Wrap evaluation in `with torch.no_grad():` (or `torch.inference_mode()`). model.eval() "
    "only switches Dropout and BatchNorm; it does not stop autograd from keeping every "
    "activation for a backward pass that never comes. You need both."
)
MAX_EVENTS = 256
STEP_QUIET_SECONDS = 30.0
STEP_QUIET_STEPS = 3.0


@dataclass
class _EvalState:
    last_seen: float
    history: deque = field(default_factory=deque)  # (time, allocated, peak)
    events: list = field(default_factory=list)  # (time, data) of recent eval_autograd events
    step_peak: int | None = None
    flagged: tuple | None = None  # (since, growth, baseline, peak, count, model)
    dropped: int = 0  # events thinned out of ``events``
    last_step: float | None = None  # when the last optimizer step was reported
    step_times: deque = field(default_factory=lambda: deque(maxlen=16))


def _quiet_needed(st: _EvalState) -> float:
    """Seconds without an optimizer step before eval forwards are evaluation."""
    steps = sorted(st.step_times)
    typical = steps[len(steps) // 2] if steps else 0.0
    return max(STEP_QUIET_SECONDS, STEP_QUIET_STEPS * typical)


class EvalAutogradRule:
    def __init__(self):
        self._state: dict = {}

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        keep = settings.event_keep_minutes * 60
        window = settings.eval_window_seconds
        alerts = []
        for report in frame.agents:
            st = self._state.get(report.identity)
            if st is None:
                st = self._state[report.identity] = _EvalState(last_seen=now)
            st.last_seen = now
            dev = device_named(report, None)
            if dev is not None and dev.allocated is not None:
                peak = dev.peak_allocated if dev.peak_allocated is not None else dev.allocated
                st.history.append((report.time or now, dev.allocated, max(peak, dev.allocated)))
            for ev in sorted(report.events, key=lambda e: e.time):
                if ev.kind == EventKind.EVAL_AUTOGRAD:
                    st.events.append((ev.time, dict(ev.data)))
                elif ev.kind == EventKind.STEP:
                    if ev.data.get("peak_allocated") is not None:
                        st.step_peak = ev.data["peak_allocated"]
                    if st.last_step is not None and ev.time > st.last_step:
                        st.step_times.append(ev.time - st.last_step)
                    st.last_step = ev.time
                    if st.flagged is None:  # forwards before an optimizer step were training
                        st.events = [e for e in st.events if e[0] > ev.time]
            horizon = now - max(keep, 2 * window)
            while st.history and st.history[0][0] < horizon:
                st.history.popleft()
            st.events = [e for e in st.events if e[0] >= now - keep]
            if not st.events:
                st.dropped = 0
            if st.last_step is None or now - st.last_step >= _quiet_needed(st):
                self._measure(st, window, settings.eval_min_growth_bytes)
            if st.flagged is not None and st.flagged[0] < now - keep and not st.events:
                st.flagged = None
            if st.flagged is None or not report.connected:
                continue
            since, growth, baseline, peak, count, model = st.flagged
            gpu = gpu_for_device(frame, report, dev)
            evidence = [
                f"{count} forward pass(es) of {model or 'a registered model'} in eval mode with grad enabled",
                f"allocated {fmt_bytes(baseline)} before, peak {fmt_bytes(peak)} during "
                f"(+{fmt_bytes(growth)})",
            ]
            if st.step_peak is not None:
                cmp = "more than" if peak > st.step_peak else "compared with"
                evidence.append(
                    f"eval peak {fmt_bytes(peak)} is {cmp} the training step peak {fmt_bytes(st.step_peak)}"
                )
            alerts.append(
                Alert(
                    kind=AlertKind.EVAL_AUTOGRAD,
                    severity=WARNING,
                    gpu=gpu.index if gpu is not None else None,
                    pid=report.pid,
                    start_time=report.start_time,
                    since=since,
                    message=(
                        f"{process_name(frame, report.pid, gpu, dev.device if dev else None)}: eval forward passes keep their graphs "
                        f"(+{fmt_bytes(growth)} while evaluating)"
                    ),
                    evidence=tuple(evidence),
                    fix=EVAL_FIX,
                    device=dev.device if dev is not None else None,
                    data={
                        "growth": growth,
                        "baseline": baseline,
                        "peak": peak,
                        "events": count,
                        "model": model,
                        "step_peak": st.step_peak,
                    },
                )
            )
        forget_stale(self._state, now, settings)
        return alerts

    @staticmethod
    def _measure(st: _EvalState, window: float, min_growth: int) -> None:
        """Growth of allocated from just before the first recent eval event to the
        highest peak within ``window`` after any of them."""
        if not st.events or not st.history:
            return
        st.events.sort(key=lambda e: e[0])
        if len(st.events) > MAX_EVENTS:  # an eval loop can report thousands of passes
            st.dropped += len(st.events) - MAX_EVENTS
            del st.events[1 : len(st.events) - MAX_EVENTS + 1]  # keep the first and the newest
        times = [t for t, _ in st.events]
        first, data0 = st.events[0]
        if data0.get("allocated_before") is not None:
            baseline = data0["allocated_before"]
        else:
            before = [a for t, a, _ in st.history if t <= first]
            baseline = before[-1] if before else st.history[0][1]
        peaks = []
        for t, _, p in st.history:
            i = bisect_right(times, t) - 1  # the latest event at or before t
            if i >= 0 and t - times[i] <= window:
                peaks.append(p)
        peaks += [d["peak_allocated"] for _, d in st.events if d.get("peak_allocated") is not None]
        if not peaks:
            return
        peak = max(peaks)
        growth = peak - baseline
        count = len(st.events) + st.dropped
        model = next((d.get("model") for _, d in st.events if d.get("model")), None)
        if growth >= 0 and (st.flagged is not None or growth >= min_growth):
            since = st.flagged[0] if st.flagged is not None else first
            if st.flagged is None or growth >= st.flagged[1]:
                st.flagged = (since, growth, baseline, peak, count, model)
            else:
                st.flagged = (since,) + st.flagged[1:4] + (count, model)
