"""Growth: a process's NVML memory rising steadily -- no agent needed.

Per process and GPU, the robust trend of the current regime (trend.py: a
warm-up ramp that ended, or a one-off step when a model loads, is not
extrapolated) gives the rate in MiB/min and the time until the card is full at
that rate. The near-OOM rule reads these trends to name the growing processes.
Inference servers are left out: they fill their pool at start-up by design.

Growth in jumps (+400 MiB every few minutes: 8 GiB in 2 hours) is flat in any
few-minute window, so each process also keeps one low per minute for
``STAIR_MINUTES``: three new highs of at least ``growth_min_rise_bytes``, minutes
apart and none given back, is growth too (trend.staircase) -- a ramp that ends
is the trend's, and workers oscillating around a level make no new highs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from vramscope.core.detectors.alert import INFO, WARNING, Alert, AlertKind
from vramscope.core.detectors.advice import growing_server_fix, serves_requests
from vramscope.core.detectors.naming import AGENT, SERVER, TRAINING, proc_name, process_kind
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.detectors.trend import (
    Staircase,
    Trend,
    current_trend,
    is_significant,
    staircase,
)
from vramscope.core.samples import Frame, GpuProcess, GpuSample
from vramscope.core.units import MiB, fmt_bytes, fmt_duration


STAIR_MINUTES = 240  # per-minute lows kept per process (4 h)
STAIR_MIN_GAP_MINUTES = 2  # jumps this far apart at least: a staircase, not a ramp


def stairs(s: "_Series", jump: float) -> Staircase | None:
    """The process's per-minute lows as a staircase still climbing, or None."""
    if len(s.minutes) < 2 * STAIR_MIN_GAP_MINUTES + 2:
        return None
    minutes = [m for m, _ in s.minutes]
    lows = [low for _, low in s.minutes]
    # a missing minute (no reading) is the level before it
    levels: list[float] = []
    for i, m in enumerate(minutes):
        if i:
            levels.extend([levels[-1]] * (m - minutes[i - 1] - 1))
        levels.append(lows[i])
    found = staircase(levels, jump)
    if found is None or min(b - a for a, b in zip([0, *found.ups], found.ups)) < STAIR_MIN_GAP_MINUTES:
        return None
    return found


@dataclass
class _Series:
    last_seen: float
    points: deque = field(default_factory=deque)  # (time, used bytes)
    trend: Trend | None = None
    # sliding-window extremes (monotonic queues), so a flat process costs O(1) a pass
    lows: deque = field(default_factory=deque)
    highs: deque = field(default_factory=deque)
    minutes: deque = field(default_factory=lambda: deque(maxlen=STAIR_MINUTES))  # [minute, low]
    stair_minute: int | None = None  # the minute the staircase was last judged at
    stair: Staircase | None = None

    def add(self, t: float, used: int) -> None:
        self.points.append((t, used))
        minute = int(t // 60)
        last = self.minutes[-1] if self.minutes else None
        if last is not None and last[0] == minute:
            if used < last[1]:
                last[1] = used
        else:
            self.minutes.append([minute, used])
        while self.lows and self.lows[-1][1] >= used:
            self.lows.pop()
        self.lows.append((t, used))
        while self.highs and self.highs[-1][1] <= used:
            self.highs.pop()
        self.highs.append((t, used))

    def trim(self, since: float) -> None:
        while self.points and self.points[0][0] < since:
            self.points.popleft()
        for q in (self.lows, self.highs):
            while q and q[0][0] < since:
                q.popleft()

    def spread(self) -> float:
        return float(self.highs[0][1] - self.lows[0][1]) if self.lows else 0.0


@dataclass(frozen=True, slots=True)
class Growing:
    """One process found growing on one GPU (read by the near-OOM rule)."""

    gpu: int
    proc: GpuProcess
    kind: str
    trend: Trend


def rate_text(bytes_per_s: float) -> str:
    return f"{bytes_per_s * 60 / MiB:,.0f} MiB/min"


def growing_fix(kind: str, proc: GpuProcess | None = None) -> str:
    info = proc.info if proc is not None else None
    if kind == TRAINING and serves_requests(info):  # a server of no known engine
        return growing_server_fix(info)
    if kind == AGENT:
        return (
            "It runs under the agent: its panel shows which bucket grows. Allocated rising "
            "after every step is a leak (a loss or output kept with its graph: .item() / "
            ".detach()); reserved rising with allocated flat is the caching allocator "
            "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)."
        )
    return (
        "Run it under the agent (`vramscope run -- python train.py`) to see which PyTorch "
        "bucket grows: allocated rising step after step is a leak (a loss or output kept "
        "with its graph: .item() / .detach()), reserved rising with allocated flat is the "
        "caching allocator. If it is meant to grow (a cache filling up), cap it."
    )


@dataclass(frozen=True, slots=True)
class Risen:
    """One process that rose by a step within the trend window (a job that loaded,
    a batch that got bigger): what filled the card, trend or not."""

    gpu: int
    proc: GpuProcess
    rise: int  # bytes above its lowest reading in the window
    since: float  # when it was at that low


class GrowthRule:
    def __init__(self):
        self._series: dict[tuple, _Series] = {}
        self.growing: list[Growing] = []  # as of the last update
        self.risen: list[Risen] = []  # as of the last update

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        window = settings.near_oom_trend_minutes * 60
        self.growing = []
        self.risen = []
        alerts = []
        for gpu, proc in frame.all_processes():
            key = (gpu.index, proc.identity)
            s = self._series.get(key)
            if s is None:
                s = self._series[key] = _Series(last_seen=now)
            s.last_seen = now
            if proc.used is not None:
                s.add(now, proc.used)
            s.trim(now - window)
            s.trend = None
            if (
                proc.used is not None
                and s.lows
                and proc.used - s.lows[0][1] >= settings.growth_min_rise_bytes
            ):
                self.risen.append(Risen(gpu.index, proc, proc.used - s.lows[0][1], s.lows[0][0]))
            if len(s.points) < settings.near_oom_min_points:
                continue
            found = None
            if s.spread() >= settings.growth_min_rise_bytes:  # else flat within the window
                s.trend = current_trend([t for t, _ in s.points], [u for _, u in s.points])
                found = self._judge(frame, gpu, proc, s.trend, settings)
            if found is not None:
                growing, alert = found
                self.growing.append(growing)
                if alert is not None:
                    alerts.append(alert)
                continue
            if s.stair_minute != s.minutes[-1][0]:  # judged once a minute, not every pass
                s.stair_minute = s.minutes[-1][0]
                s.stair = stairs(s, settings.growth_min_rise_bytes)
            stair = s.stair
            if stair is not None:
                alert = self._stair_alert(frame, gpu, proc, s, stair, now, settings)
                if alert is not None:
                    alerts.append(alert)
        forget_stale(self._series, now, settings)
        return alerts

    def _stair_alert(
        self,
        frame,
        gpu: GpuSample,
        proc: GpuProcess,
        s: _Series,
        stair: Staircase,
        now: float,
        settings: DiagnosticSettings,
    ) -> Alert | None:
        kind = process_kind(frame, proc)
        if kind == SERVER:
            return None
        first_minute = s.minutes[0][0]
        began = first_minute * 60.0
        last_jump = (first_minute + stair.last_up) * 60.0
        rise = stair.last - stair.first
        rate = rise / max(60.0, last_jump - began)  # bytes/s, averaged over the staircase
        free = (
            gpu.free
            if gpu.free is not None
            else (gpu.total - gpu.used if gpu.total is not None and gpu.used is not None else None)
        )
        eta = max(0.0, free / rate) if free is not None and rate > 0 else None
        severity = WARNING if eta is not None and eta <= settings.near_oom_horizon_minutes * 60 else INFO
        who = proc_name(proc, gpu)
        full = f"; the card is full in about {fmt_duration(eta)} at this rate" if eta is not None else ""
        evidence = (
            f"{stair.jumps} jumps to a new level since {fmt_duration(now - began)} ago, none "
            f"given back: +{fmt_bytes(rise)} in all, the last {fmt_duration(max(0.0, now - last_jump))} "
            "ago (the lowest reading of each minute)",
            f"{fmt_bytes(proc.used)} now; {gpu.label}: {fmt_bytes(free)} free of {fmt_bytes(gpu.total)}",
        )
        return Alert(
            kind=AlertKind.GROWTH,
            severity=severity,
            gpu=gpu.index,
            pid=proc.pid,
            start_time=proc.identity[1],
            since=began,
            message=(
                f"{who} grows in steps: +{fmt_bytes(rise)} in {fmt_duration(last_jump - began)}"
                f" ({stair.jumps} jumps, about {rate_text(rate)}){full}"
            ),
            evidence=evidence,
            fix=growing_fix(kind, proc),
            data={
                "bytes_per_second": rate,
                "seconds_to_full": eta,
                "regime_start": began,
                "process_kind": kind,
                "staircase_jumps": stair.jumps,
            },
        )

    def _judge(
        self, frame, gpu: GpuSample, proc: GpuProcess, trend: Trend | None, settings: DiagnosticSettings
    ):
        if (
            trend is None
            or trend.span < settings.growth_min_seconds
            or trend.slope * 60 < settings.growth_min_bytes_per_minute
            or trend.rise() < settings.growth_min_rise_bytes
            or not is_significant(trend)
        ):
            return None
        kind = process_kind(frame, proc)
        free = (
            gpu.free
            if gpu.free is not None
            else (gpu.total - gpu.used if gpu.total is not None and gpu.used is not None else None)
        )
        eta = max(0.0, free / trend.slope) if free is not None else None
        growing = Growing(gpu.index, proc, kind, trend)
        if kind == SERVER:
            return growing, None  # filling its pool: the server rule explains it
        who = proc_name(proc, gpu)
        full = f"; the card is full in about {fmt_duration(eta)} at this rate" if eta is not None else ""
        severity = WARNING if eta is not None and eta <= settings.near_oom_horizon_minutes * 60 else INFO
        evidence = (
            f"{fmt_bytes(proc.used)} now; +{fmt_bytes(trend.rise())} over the last "
            f"{fmt_duration(trend.span)} (robust Theil-Sen trend of its current regime; "
            f"{trend.agreement:.0%} of reading pairs rise)",
            f"{gpu.label}: {fmt_bytes(free)} free of {fmt_bytes(gpu.total)}",
        )
        alert = Alert(
            kind=AlertKind.GROWTH,
            severity=severity,
            gpu=gpu.index,
            pid=proc.pid,
            start_time=proc.identity[1],
            since=trend.start,
            message=f"{who} grows {rate_text(trend.slope)}{full}",
            evidence=evidence,
            fix=growing_fix(kind, proc),
            data={
                "bytes_per_second": trend.slope,
                "seconds_to_full": eta,
                "regime_start": trend.start,
                "process_kind": kind,
            },
        )
        return growing, alert
