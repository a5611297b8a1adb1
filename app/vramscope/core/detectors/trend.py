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


def kendall_z(agreement: float, n: int) -> float:
    """How many standard deviations the share of rising pairs is above chance:
    Kendall's tau = 2*agreement - 1 against its null deviation
    sqrt(2(2n+5) / (9n(n-1))) (no ties)."""
    if n < 3:
        return 0.0
    tau = 2.0 * agreement - 1.0
    return tau / float(np.sqrt(2.0 * (2 * n + 5) / (9.0 * n * (n - 1))))


def robust_level(x: Sequence[float], y: Sequence[float], slope: float) -> float:
    """Intercept-free level at the last x: median of y - slope*(x - x_last)."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    return float(np.median(ya - slope * (xa - xa[-1])))


# -- the current regime ---------------------------------------------------------------
# A memory curve is piecewise: a warm-up ramp, a plateau, a step when a model
# loads, steady growth. Extrapolating across regimes is what kept an ended ramp
# saying "full in about 1 min" minutes after it flattened. The current regime
# starts at the last break of a two-segment least-squares fit (found in O(n)
# with prefix sums) that explains the curve much better than one line does;
# the slope is then Theil-Sen over the current regime only.

BREAK_MIN_SECONDS = 15.0  # shortest segment a break may leave on either side
BREAK_MAX_RATIO = 0.3  # two lines must leave at most this share of one line's error
NOISE_FLOOR_MIB = 8.0  # readings closer than this are "the same level"


def _sse_table(t: np.ndarray, y: np.ndarray):
    """Prefix sums so that the least-squares residual of any [a, b) is O(1)."""
    z = np.zeros(1)
    c = lambda v: np.concatenate((z, np.cumsum(v)))  # noqa: E731
    return c(np.ones_like(t)), c(t), c(y), c(t * t), c(t * y), c(y * y)


def _sse(tab, a, b):
    n, st, sy, stt, sty, syy = (v[b] - v[a] for v in tab)
    with np.errstate(divide="ignore", invalid="ignore"):
        sxx = stt - st * st / n
        sxy = sty - st * sy / n
        res = syy - sy * sy / n - np.where(sxx > 1e-12, sxy * sxy / np.where(sxx > 1e-12, sxx, 1), 0)
    return np.maximum(res, 0.0)


def regime_start(t: Sequence[float], y: Sequence[float], noise: float | None = None) -> int:
    """Index where the current regime begins (0 when the whole series is one)."""
    ta = np.asarray(t, dtype=float)
    ya = np.asarray(y, dtype=float)
    start = 0
    for _ in range(3):  # ramp -> plateau -> ramp: at most a few nested breaks
        tt, yy = ta[start:] - ta[start], ya[start:]
        n = len(tt)
        if n < 6 or tt[-1] < 2 * BREAK_MIN_SECONDS:
            break
        scale = noise if noise is not None else noise_scale(yy)
        tab = _sse_table(tt, yy)
        ks = np.arange(2, n - 1)
        ok = (tt[ks] - tt[0] >= BREAK_MIN_SECONDS) & (tt[-1] - tt[ks] >= BREAK_MIN_SECONDS)
        ks = ks[ok]
        if ks.size == 0:
            break
        one = float(_sse(tab, 0, n))
        two = _sse(tab, 0, ks) + _sse(tab, ks, n)
        best = int(np.argmin(two))
        gain = one - float(two[best])
        if gain <= n * scale * scale or float(two[best]) > BREAK_MAX_RATIO * one:
            break
        start += int(ks[best])
    return start


def noise_scale(y: Sequence[float]) -> float:
    """Robust reading-to-reading noise (MAD of differences), at least the floor."""
    ya = np.asarray(y, dtype=float)
    floor = NOISE_FLOOR_MIB * (1 << 20)
    if len(ya) < 3:
        return floor
    d = np.diff(ya)
    mad = float(np.median(np.abs(d - np.median(d))))
    return max(floor, 1.4826 * mad / np.sqrt(2.0))


class Trend:
    """Slope (units per second) and level of the current regime of a series."""

    __slots__ = ("slope", "agreement", "level", "start", "span", "points")

    def __init__(self, slope, agreement, level, start, span, points):
        self.slope = slope
        self.agreement = agreement
        self.level = level
        self.start = start  # time the regime began
        self.span = span  # seconds the regime covers
        self.points = points

    def rise(self) -> float:
        return (self.slope or 0.0) * self.span


# A trend is real when its rise is not chance: most reading pairs of the regime rise
# (agreement) and Kendall's tau says so well beyond chance. The growth rule and the
# process table's Growth colour use this one test.
MIN_AGREEMENT = 0.6
MIN_TREND_Z = 3.0


def is_significant(trend: "Trend") -> bool:
    return (
        trend.slope is not None
        and trend.agreement >= MIN_AGREEMENT
        and kendall_z(trend.agreement, min(trend.points, MAX_POINTS)) >= MIN_TREND_Z
    )


def current_trend(t: Sequence[float], y: Sequence[float]) -> Trend | None:
    """Theil-Sen over the current regime; None with fewer than three points."""
    if len(t) < 3:
        return None
    k = regime_start(t, y)
    tt, yy = list(t)[k:], list(y)[k:]
    if len(tt) < 3:
        return None
    slope, agreement = theil_sen(tt, yy)
    if slope is None:
        return None
    return Trend(slope, agreement, robust_level(tt, yy, slope), tt[0], tt[-1] - tt[0], len(tt))


# -- staircases -------------------------------------------------------------------------
# Memory kept in jumps (a leak only in evaluation phases; +400 MiB every few minutes)
# is flat between jumps, so no slope over a recent window sees it. Over coarse
# levels (block medians, per-minute lows) it is a run of new highs, none given back.

STAIR_UPS = 3  # new highs that make a staircase
STAIR_HOLD = 3.0  # it goes on until its last jump is this many of its longest gaps old


class Staircase:
    __slots__ = ("ups", "first", "last", "last_up", "levels")

    def __init__(self, ups, first, last, last_up, levels):
        self.ups = ups  # indices of the levels that were new highs
        self.first = first  # the first level
        self.last = last  # the newest level
        self.last_up = last_up  # index of the newest jump
        self.levels = levels  # how many levels (the newest is levels - 1)

    @property
    def jumps(self) -> int:
        return len(self.ups)


def staircase(
    levels: Sequence[float], jump: float, need: int = STAIR_UPS, hold: float = STAIR_HOLD
) -> Staircase | None:
    """Levels that rose to a new high by at least ``jump`` ``need`` times, never fell a
    jump below the top, and are still climbing (the last jump no older than ``hold``
    times the longest gap between jumps); None otherwise."""
    lv = np.asarray(levels, dtype=float)
    if len(lv) < need + 1:
        return None
    top = lv[0]
    ups = []
    for i in range(1, len(lv)):
        if lv[i] >= top + jump:
            ups.append(i)
        top = max(top, lv[i])
    if len(ups) < need or lv[-1] < top - jump:
        return None
    gaps = np.diff([0, *ups])
    if len(lv) - 1 - ups[-1] > hold * max(int(gaps.max()), 1):
        return None  # it stopped climbing: a fill that ended
    return Staircase(ups, float(lv[0]), float(lv[-1]), ups[-1], len(lv))
