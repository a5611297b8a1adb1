"""Which processes a GPU's timeline draws, from each process's latest point:
those reported now (with their latest figure), those that ended inside the
time window, and those reported with memory n/a all along (named, never drawn
as 0). One read of the latest points, so choosing costs O(processes) and only
the drawn series are read in full. No Qt."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from vramscope.core.processes.stacking import any_finite

EPSILON = 1e-6  # seconds: a point at t_end is "now"


def sort_points(
    points: dict[tuple, tuple[float, float]],
    series: Callable[[tuple], tuple[np.ndarray, np.ndarray]],
    since: float | None,
    t_end: float,
) -> tuple[dict[tuple, float], dict[tuple, float], list[tuple]]:
    """``points``: store key -> (time, bytes) of its latest point; ``series(key)``
    its (times, values) up to ``t_end``. Returns (alive: key -> latest bytes,
    ended: key -> last time, not plotted: keys)."""
    alive: dict[tuple, float] = {}  # reported now, with a figure: key -> latest bytes
    ended: dict[tuple, float] = {}  # in the window, no longer reported: key -> last time
    not_plotted: list[tuple] = []  # reported, but memory n/a all along: not drawn as 0
    for key, (last_t, last_v) in points.items():
        if last_t > t_end + EPSILON:  # paused: the series as it was at t_end
            t, v = series(key)
            if not len(t):
                continue
            last_t, last_v = float(t[-1]), float(v[-1])
        if since is not None and last_t < since:
            continue  # ended before the window
        now_listed = last_t >= t_end - EPSILON
        finite = math.isfinite(last_v) or any_finite(*series(key), since)
        if not finite:
            if now_listed:
                not_plotted.append(key)
        elif now_listed:
            alive[key] = last_v if math.isfinite(last_v) else 0.0
        else:
            ended[key] = last_t
    return alive, ended, not_plotted
