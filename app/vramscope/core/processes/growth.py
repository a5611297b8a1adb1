"""How fast a process's device memory grows, for the process table: MiB per
minute over the last minutes (Theil-Sen, so one spike makes no trend) and a
short sparkline of the same stretch.

The figure is the growth rule's (detectors/growth.py): the slope of the current
regime only (a ramp that ended 90 s ago reads flat, not "+4491 MiB/min"), and
only when it is real -- significant by the same test (trend.is_significant) and
rising more than the readings' own scatter. Workers oscillating +-150 MiB read
flat (0), not "+18 MiB/min"."""

from __future__ import annotations

import numpy as np

from vramscope.core.detectors.trend import current_trend, is_significant, noise_scale
from vramscope.core.processes.stacking import stretch_starts
from vramscope.core.units import MiB

GROWTH_WINDOW = 300.0  # seconds of history the rate and the sparkline cover
MIN_SPAN = 60.0  # less history than this: no rate yet (None)
FIT_POINTS = 40  # points the fit uses (evenly thinned)
SPARK_POINTS = 24
NOISE_RISES = 2.0  # a real trend rises more than this many reading-to-reading scatters


def recent(t: np.ndarray, v: np.ndarray, now: float, window: float = GROWTH_WINDOW):
    """The finite samples of the last ``window`` seconds."""
    keep = (t >= now - window) & np.isfinite(v)
    return t[keep], v[keep]


def growth_per_minute(
    t: np.ndarray, v: np.ndarray, now: float, window: float = GROWTH_WINDOW
) -> float | None:
    """MiB per minute over the last ``window`` seconds; None with under MIN_SPAN of data."""
    return _rate(*recent(t, v, now, window))


def _rate(t: np.ndarray, v: np.ndarray) -> float | None:
    """growth_per_minute of samples already cut to the window."""
    if len(t) < 2 or t[-1] - t[0] < MIN_SPAN:
        return None
    if v.min() == v.max():
        return 0.0  # flat (most processes under a caching allocator): every slope is 0
    if len(t) > FIT_POINTS:
        idx = np.linspace(0, len(t) - 1, FIT_POINTS).round().astype(int)
        t, v = t[idx], v[idx]
    trend = current_trend(t, v)
    if trend is None:
        return None
    if not is_significant(trend) or abs(trend.rise()) < NOISE_RISES * noise_scale(v):
        return 0.0  # flat, or oscillating: no trend to show
    return trend.slope * 60.0 / MiB


def sparkline(
    t: np.ndarray, v: np.ndarray, now: float, window: float = GROWTH_WINDOW, points: int = SPARK_POINTS
) -> tuple[float, ...]:
    """Up to ``points`` values (bytes) evenly over the last ``window`` seconds, the
    peak of each stretch (a spike stays visible)."""
    return _spark(*recent(t, v, now, window), now, window, points)


def _spark(
    t: np.ndarray, v: np.ndarray, now: float, window: float = GROWTH_WINDOW, points: int = SPARK_POINTS
) -> tuple[float, ...]:
    """sparkline of samples already cut to the window (times ascending)."""
    if len(v) < 2:
        return ()
    edges = np.linspace(now - window, now, points + 1)
    edges[0] = t[0]  # the first stretch begins with the first sample
    starts = stretch_starts(t, edges[:-1])
    return tuple(np.maximum.reduceat(v, starts).tolist())


# seconds a row's figures are reused before they are worked out again: one sparkline point
GROWTH_REFRESH = GROWTH_WINDOW / SPARK_POINTS
ROW_BUDGET = 512  # rows worked out per table built at least; a bigger box refreshes over several builds


class GrowthCache:
    """Growth and sparkline per process key, worked out again at most every
    GROWTH_REFRESH seconds. On a busy box (thousands of processes) at most
    max(ROW_BUDGET, n / 32) rows are worked out per table built, new processes
    first, then the longest-unrefreshed: every row within 32 builds (16 GPUs x
    1,024 processes, whose table the window builds every ~4 s: every row within
    about 2 minutes; 30-40 ms a build, ~150 ms once a minute of readings is
    there to fit). The figures describe minutes, so that delay changes little a
    reader can see, and a build never costs O(processes x history). A moment
    before the one worked out (a recorded session scrubbed back) is worked out
    again."""

    def __init__(self):
        # key -> (growth, sparkline), and apart, key -> the time they were worked out:
        # ``update`` hands out the stored pairs, so a frame of 16k rows makes no new
        # objects for the garbage collector to count (a float is none)
        self._figures: dict = {}
        self._when: dict = {}

    def update(self, store, keys: list, now: float) -> dict:
        """key -> (MiB/min or None, sparkline) for ``keys`` at ``now``."""
        figures, when = self._figures, self._when
        budget = max(ROW_BUDGET, len(keys) // 32)
        due = [k for k in keys if k not in when]
        if len(due) < budget:
            stale = [(when[k], k) for k in keys if k in when and not 0 <= now - when[k] < GROWTH_REFRESH]
            stale.sort(key=lambda e: e[0])
            due += [k for _t, k in stale[: budget - len(due)]]
        for key in due[:budget]:  # ~80 us each
            t, v = recent(*store.series(key, now - GROWTH_WINDOW - 10.0), now)
            figures[key] = (_rate(t, v), _spark(t, v, now))
            when[key] = now
        if len(figures) > 2 * len(keys) + 64:  # processes that ended: forget them
            live = set(keys)
            self._figures = figures = {k: f for k, f in figures.items() if k in live}
            self._when = {k: w for k, w in when.items() if k in live}
        get = figures.get
        return {k: f for k in keys if (f := get(k)) is not None}
