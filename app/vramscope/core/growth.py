"""How fast a process's device memory grows, for the process table: MiB per
minute over the last minutes (Theil-Sen, so one spike makes no trend) and a
short sparkline of the same stretch."""

from __future__ import annotations

import numpy as np

from vramscope.core.detectors.trend import theil_sen
from vramscope.core.units import MiB

GROWTH_WINDOW = 300.0  # seconds of history the rate and the sparkline cover
MIN_SPAN = 60.0  # less history than this: no rate yet (None)
FIT_POINTS = 40  # points the fit uses (evenly thinned)
SPARK_POINTS = 24


def recent(t: np.ndarray, v: np.ndarray, now: float, window: float = GROWTH_WINDOW):
    """The finite samples of the last ``window`` seconds."""
    keep = (t >= now - window) & np.isfinite(v)
    return t[keep], v[keep]


def growth_per_minute(t: np.ndarray, v: np.ndarray, now: float,
                      window: float = GROWTH_WINDOW) -> float | None:
    """MiB per minute over the last ``window`` seconds; None with under MIN_SPAN of data."""
    t, v = recent(t, v, now, window)
    if len(t) < 2 or t[-1] - t[0] < MIN_SPAN:
        return None
    if len(t) > FIT_POINTS:
        idx = np.linspace(0, len(t) - 1, FIT_POINTS).round().astype(int)
        t, v = t[idx], v[idx]
    slope, _agreement = theil_sen(t, v)
    return None if slope is None else slope * 60.0 / MiB


def sparkline(t: np.ndarray, v: np.ndarray, now: float, window: float = GROWTH_WINDOW,
              points: int = SPARK_POINTS) -> tuple[float, ...]:
    """Up to ``points`` values (bytes) evenly over the last ``window`` seconds, the
    peak of each stretch (a spike stays visible)."""
    t, v = recent(t, v, now, window)
    if len(v) < 2:
        return ()
    edges = np.linspace(now - window, now, points + 1)
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, points - 1)
    out = np.full(points, np.nan)
    np.fmax.at(out, which, v)
    return tuple(float(x) for x in out[np.isfinite(out)])
