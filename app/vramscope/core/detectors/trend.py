"""Robust trend arithmetic shared by the leak and near-OOM rules.

Theil-Sen: the median of the slopes of all pairs of points. One outlier (a
spike) moves the median by at most one rank, so a single noisy pair never
makes a trend -- unlike a least-squares fit or "last minus first".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MAX_POINTS = 160  # pairs grow quadratically; beyond this, thin evenly


def _pairs(x: Sequence[float], y: Sequence[float]):
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    if len(xa) > MAX_POINTS:
        idx = np.linspace(0, len(xa) - 1, MAX_POINTS).round().astype(int)
        xa, ya = xa[idx], ya[idx]
    i, j = np.triu_indices(len(xa), k=1)
    dx = xa[j] - xa[i]
    ok = dx != 0
    return (ya[j] - ya[i])[ok] / dx[ok]


def theil_sen(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, float]:
    """(slope, agreement): the median pairwise slope, and the share of pairs
    rising (for a positive slope) or falling (for a negative one). None when
    fewer than two distinct x."""
    slopes = _pairs(x, y)
    if slopes.size == 0:
        return None, 0.0
    slope = float(np.median(slopes))
    if slope > 0:
        agreement = float(np.mean(slopes > 0))
    elif slope < 0:
        agreement = float(np.mean(slopes < 0))
    else:
        agreement = float(np.mean(slopes == 0))
    return slope, agreement


def robust_level(x: Sequence[float], y: Sequence[float], slope: float) -> float:
    """Intercept-free level at the last x: median of y - slope*(x - x_last)."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    return float(np.median(ya - slope * (xa - xa[-1])))
