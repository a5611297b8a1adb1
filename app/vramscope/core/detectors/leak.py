"""Leak: allocated memory after each optimizer step creeping up, for good.

After an optimizer step only the fixed cost (weights, gradients, optimizer
state) should be live, so "allocated after step" is flat in a healthy run.
The PyTorch FAQ names the usual cause ("Don't accumulate history across your
training loop", pytorch.org/docs/stable/notes/faq.html): ``losses.append(loss)``
keeps each step's graph alive; use ``.item()`` or ``.detach()``. It grows
slowly and ends in an OOM hundreds of steps later.

A rise alone is not a leak: caches that fill and are flushed (a bounded
sawtooth: +2 MiB/step for 20 steps, then back) rise just as steadily for a
while. So the rule remembers each climb that ended in a reset (the reading
fell back to where the climb began) and calls a climb a leak only when it has
lasted longer than ``leak_steps`` *and* longer than the longest reset period
seen, with a robust (Theil-Sen) slope over the recent window and Kendall's
tau as its significance -- one spike or jitter does not make a trend. Steps
count by the step numbers the agent reports, so the rule works from whatever
after-step readings exist: on steps too short for the agent to read each one
(2 ms: about 1 in 50), the window spans at least ``WINDOW_MIN_POINTS`` readings.

Three more shapes (issue 27):
- a single step up (a buffer created once, optimizer state made lazily) is not a
  creep: the slope is fitted over the current regime only (trend.regime_start),
  so a flat stretch after one jump is flat;
- a leak that happens only in evaluation phases is a staircase in the after-step
  readings: flat while training, a jump after each evaluation that never comes
  back. three clear new highs since the climb began is a leak, and it stays raised
  while the staircase goes on (trend.staircase);
- at the threshold a slope flips above and below it from step to step: once
  raised, the alert holds while the slope stays above ``HOLD_SHARE`` of the
  threshold and the rise stays significant at ``HOLD_Z`` -- hysteresis, so it
  does not flap (and an acknowledgement is not lost to a flap).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from statistics import median

import numpy as np

from vramscope.core.detectors.agentmap import device_named, gpu_for_device, headroom
from vramscope.core.detectors.alert import CRITICAL, WARNING, Alert, AlertKind
from vramscope.core.detectors.naming import process_name
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.detectors.trend import (
    MAX_POINTS,
    STAIR_UPS,
    Staircase,
    kendall_z,
    regime_start,
    staircase,
    theil_sen,
)
from vramscope.core.samples import Frame
from vramscope.core.units import MiB, fmt_bytes, fmt_duration

HISTORY_POINTS = 4096  # after-step readings kept per process and device
CLIMB_START_POINTS = 5  # readings whose median is the level a climb began at
RESET_VIEW_POINTS = 200  # the newest readings a reset is judged against
WINDOW_MIN_STEPS = 60  # the slope is fitted over at least this many recent steps of the climb
# ... and over at least this many of its newest readings: on steps too short for the agent's
# budget to read each one (2 ms: ~1 in 50), 60 steps hold one or two readings
WINDOW_MIN_POINTS = 20
HOLD_SHARE = 0.5  # a raised leak holds while its slope is at least this share of the threshold
HOLD_Z = 2.0  # ... and its rise this significant
STAIR_BLOCK = 10  # readings per block whose median is one level of a staircase
STAIR_MIN_JUMP_BYTES = 64 * MiB  # a new high must clear the previous one by this much

LEAK_FIX = (
    "Allocated memory after an optimizer step should come back to the same level; a steady "
    "rise means tensors from earlier steps are kept alive, usually a loss or output kept "
    "with its computation graph. losses.append(loss) retains the whole graph: append "
    "loss.item() (or loss.detach()) instead, and look for other tensors collected across "
    "steps (metrics, outputs, hidden states)."
)


@dataclass
class _LeakState:
    last_seen: float
    points: deque = field(default_factory=lambda: deque(maxlen=HISTORY_POINTS))
    # (step, allocated_after, time, duration)
    last_step: float | None = None
    flagged_since: float | None = None
    counter: int = 0
    climb_start: int = 0  # index into points where the current climb began
    longest_period: float | None = None  # steps of the longest climb that ended in a reset
    climb_base: tuple | None = None  # (climb_start, the level the climb began at)


def _noise(values: np.ndarray) -> float:
    """Reading-to-reading scatter (MAD of differences), 0 for a clean series."""
    if len(values) < 4:
        return 0.0
    d = np.diff(values)
    return 1.4826 * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2.0)


class LeakRule:
    def __init__(self):
        self._state: dict[tuple, _LeakState] = {}

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
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
                        st.climb_start, st.longest_period = 0, None
                    else:
                        continue  # duplicate delivery
                st.last_step = step
                if len(st.points) == st.points.maxlen:
                    st.climb_start = max(0, st.climb_start - 1)
                st.points.append((step, after, ev.time, ev.data.get("duration")))
                self._track_resets(st, settings)
            for key, st in self._state.items():
                if key[0] != report.identity:
                    continue
                st.last_seen = now
                if not report.connected:
                    continue
                alert = self._judge(frame, report, key[1], st, settings)
                if alert is not None:
                    alerts.append(alert)
        forget_stale(self._state, now, settings)
        return alerts

    @staticmethod
    def _track_resets(st: _LeakState, settings: DiagnosticSettings) -> None:
        """A reading back at the level where the current climb began, after the climb
        rose clearly above it, ends the climb: remember how long it lasted."""
        n = len(st.points) - st.climb_start
        if n <= 2 * CLIMB_START_POINTS:
            return
        if st.climb_base is None or st.climb_base[0] != st.climb_start:
            first = [st.points[st.climb_start + i][1] for i in range(CLIMB_START_POINTS)]
            st.climb_base = (st.climb_start, float(np.median(first)))
        base = st.climb_base[1]
        recent = np.fromiter((p[1] for p in islice(reversed(st.points), RESET_VIEW_POINTS)), float)[::-1]
        values = recent[-min(n, RESET_VIEW_POINTS) :]
        # the robust scatter of the history, and the plain one of this climb (a small
        # sample's MAD can be near 0 by chance; a reset must stand out of both)
        inside = float(np.std(np.diff(values[:-1]))) / np.sqrt(2.0)
        tol = max(settings.leak_reset_min_bytes, 3.0 * _noise(recent), 3.0 * inside)
        top = float(np.percentile(values[:-1], 90))
        if top - base >= 2 * tol and values[-1] <= base + tol:
            start_step = st.points[st.climb_start][0]
            period = st.points[-1][0] - start_step
            st.longest_period = max(st.longest_period or 0, period)
            st.climb_start = len(st.points) - 1

    def _judge(self, frame, report, device_name, st: _LeakState, settings) -> Alert | None:
        points = list(st.points)[st.climb_start :]
        if len(points) < CLIMB_START_POINTS:
            st.flagged_since = None
            return None
        span = points[-1][0] - points[0][0]
        need = max(settings.leak_steps, (st.longest_period or 0) + 1)
        if span < need:
            st.flagged_since = None
            return None
        # the recent window: two of the longest reset periods, at least WINDOW_MIN_STEPS and
        # WINDOW_MIN_POINTS readings, cut at the last break (a single step up is not a creep)
        window = max(
            settings.leak_steps,
            WINDOW_MIN_STEPS,
            2 * (st.longest_period or 0),
            points[-1][0] - points[-min(len(points), WINDOW_MIN_POINTS)][0],
        )
        recent = [p for p in points if p[0] >= points[-1][0] - window]
        cut = regime_start(
            [p[0] for p in recent],
            [p[1] for p in recent],
            noise=max(
                _noise(np.fromiter((p[1] for p in recent), float)), float(settings.leak_reset_min_bytes)
            ),
        )
        recent = recent[cut:]
        steps = [p[0] for p in recent]
        values = [p[1] for p in recent]
        slope, agreement = theil_sen(steps, values)
        z = kendall_z(agreement, min(len(steps), MAX_POINTS))
        held = st.flagged_since is not None
        need_slope = settings.leak_min_slope_bytes * (HOLD_SHARE if held else 1.0)
        need_z = HOLD_Z if held else settings.leak_min_z
        stair = _staircase(points)
        creeping = (
            slope is not None
            and recent[-1][0] - recent[0][0] >= settings.leak_steps
            and slope >= need_slope
            and z >= need_z
        )
        if not creeping and stair is None:
            st.flagged_since = None
            return None
        if not creeping:  # the staircase's mean rise per step: its first and newest levels,
            # each the median of a block of readings, at their blocks' middle steps
            first, last = _block_middle(points, 0), _block_middle(points, stair.levels - 1)
            steps = [first, last]
            values = [stair.first, stair.last]
            slope = max((stair.last - stair.first) / max(1, last - first), 1.0)
            agreement, z = 1.0, float("inf")
            recent = points
        if st.flagged_since is None:
            st.flagged_since = recent[0][2]
        dev = device_named(report, device_name)
        gpu = gpu_for_device(frame, report, dev)
        room = headroom(gpu, dev)
        steps_to_oom = int(room / slope) if room is not None else None
        durations = [p[3] for p in recent if p[3]]
        step_s = median(durations) if durations else None
        eta = steps_to_oom * step_s if (steps_to_oom is not None and step_s) else None
        severity = WARNING
        if eta is not None and eta < settings.near_oom_horizon_minutes * 60:
            severity = CRITICAL
        evidence = (
            []
            if stair is None or creeping
            else [
                f"a staircase: {stair.jumps} jumps to a new level since step {points[0][0]}, none given "
                "back -- memory kept after each evaluation or other periodic phase (outputs or "
                "metrics collected with their graphs)"
            ]
        )
        evidence += [
            f"allocated after step {steps[0]}: {fmt_bytes(values[0])}; "
            f"after step {steps[-1]}: {fmt_bytes(values[-1])}",
            (
                f"robust (Theil-Sen) slope over the last {steps[-1] - steps[0]:.0f} steps"
                + _read_on(len(steps), steps[-1] - steps[0] + 1)
                + f": +{slope / MiB:.1f} MiB/step; {agreement:.0%} of step pairs rise "
                f"({z:.1f} standard deviations above chance)"
                if creeping
                else f"on average +{slope / MiB:.1f} MiB/step over {span:.0f} steps"
            ),
            (
                f"it has climbed for {span:.0f} steps without falling back; the longest climb "
                f"that did fall back lasted {st.longest_period:.0f} steps"
                if st.longest_period
                else f"it has climbed for {span:.0f} steps without ever falling back"
            ),
        ]
        if room is not None:
            evidence.append(
                f"headroom {fmt_bytes(room)} (free on {gpu.label} + this process's "
                f"cache) -> out of memory in about {steps_to_oom} steps"
                + (f" (~{fmt_duration(eta)} at {step_s:.2f} s/step)" if eta is not None else "")
            )
        else:
            evidence.append("headroom unknown (GPU not matched), so no OOM projection")
        return Alert(
            kind=AlertKind.LEAK,
            severity=severity,
            gpu=gpu.index if gpu is not None else None,
            pid=report.pid,
            start_time=report.start_time,
            since=st.flagged_since,
            message=(
                f"{process_name(frame, report.pid, gpu, device_name)}: allocated after each step grows "
                f"{slope / MiB:.1f} MiB/step"
                + (f"; out of memory in ~{steps_to_oom} steps" if steps_to_oom is not None else "")
            ),
            evidence=tuple(evidence),
            fix=LEAK_FIX,
            device=device_name,
            data={
                "slope_bytes_per_step": slope,
                "agreement": agreement,
                "z": z,
                "steps_to_oom": steps_to_oom,
                "seconds_to_oom": eta,
                "window": [int(steps[0]), int(steps[-1])],
                "longest_reset_period": st.longest_period,
                "staircase_jumps": stair.jumps if stair is not None else None,
            },
        )


def _read_on(readings: int, steps: float) -> str:
    """Where the readings are fewer than the steps (steps too short for the agent to read
    after each one), how many there were."""
    if readings >= 0.9 * steps:
        return ""
    return (
        f" (read after {readings} of them: on steps this short the agent reads after a share, "
        "within its CPU budget)"
    )


def _staircase(points: list) -> Staircase | None:
    """The readings since the climb began, as levels of ``STAIR_BLOCK`` (their medians)."""
    if len(points) < STAIR_BLOCK * (STAIR_UPS + 1):
        return None
    values = np.fromiter((p[1] for p in points), float)
    n = len(values) // STAIR_BLOCK
    blocks = np.median(values[: n * STAIR_BLOCK].reshape(n, STAIR_BLOCK), axis=1)
    jump = max(float(STAIR_MIN_JUMP_BYTES), 6.0 * _noise(values) / np.sqrt(STAIR_BLOCK))
    return staircase(blocks, jump)


def _block_middle(points: list, block: int) -> float:
    """The middle step of one of ``_staircase``'s blocks of readings."""
    return float(median(p[0] for p in points[block * STAIR_BLOCK : (block + 1) * STAIR_BLOCK]))
