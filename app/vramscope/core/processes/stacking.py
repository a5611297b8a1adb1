"""Which processes a GPU's stacked view draws on their own, and the stack itself.

Qt-free arithmetic for ui/timeline/timeline_stack.py: per-process series put on the
GPU's time base, the largest processes at the bottom, the small ones summed
into one "others" layer, and the stack thinned to about one column of points
per pixel (the peak of each column, so a short spike stays visible).
"""

from __future__ import annotations

import numpy as np

from vramscope.core.units import MiB

STACK_SHOWN = 6  # processes drawn on their own; the rest are "others (n)" until expanded
PROMOTED = 4  # layers drawn on their own beyond ``shown`` so that "others" is not the largest
LINE_CURVES = 24  # lines style: curves drawn per GPU, the largest by memory (+ alerted, selected)
ENDED_CURVES = 8  # lines style: processes that ended within the window, the latest first
ORDER_STEP = 256 * MiB  # memory differences below this do not reorder the layers


def align(base_t: np.ndarray, t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` at the times of ``base_t``; 0 where the process was not listed or n/a."""
    out = np.zeros(len(base_t))
    if not len(t) or not len(base_t):
        return out
    idx = np.searchsorted(base_t, t)
    ok = idx < len(base_t)
    ok[ok] &= base_t[idx[ok]] == t[ok]
    out[idx[ok]] = np.nan_to_num(v[ok], nan=0.0)
    return out


def choose_layers(
    current: dict,
    first_seen: list,
    must: set,
    expanded: bool,
    shown: int = STACK_SHOWN,
    fits: int | None = None,
) -> tuple[list, list]:
    """(drawn on their own, largest first; grouped into "others", not larger than
    the largest layer on its own where PROMOTED more layers can make it so).

    ``current``: key -> bytes now (alive processes); ``must``: keys always drawn
    on their own (an active alert, the selection); ``first_seen`` breaks ties so
    two processes of about the same size keep their order; ``fits``: layers the
    legend has rows for (default ``shown`` + PROMOTED), the most drawn on their own.
    """
    rank = {k: i for i, k in enumerate(first_seen)}
    order = sorted(current, key=lambda k: (-(current[k] // ORDER_STEP), rank.get(k, 1 << 30)))
    if expanded:
        return order, []
    musts = [k for k in order if k in must]
    fill = [k for k in order if k not in must][: max(0, shown - len(musts))]
    own = musts + fill
    rest = [k for k in order if k not in own]
    # "others" is not the largest band: the largest of the rest stand on their own until it is
    # not -- up to PROMOTED more (a box of hundreds of distinct small processes keeps a big
    # "others": hundreds of bands would tell nothing apart)
    fits = shown + PROMOTED if fits is None else fits
    while rest and own and len(own) < fits and sum(current[k] for k in rest) > max(current[k] for k in own):
        own.append(rest.pop(0))
    if len(rest) == 1:  # a group of one is just that process
        own, rest = own + rest, []
    own.sort(key=lambda k: order.index(k))
    return own, rest


def cumulative(layers: list[np.ndarray], points: int = 0) -> np.ndarray:
    """Row i: the top of layer i (the sum of layers 0..i); no layers: no rows of
    ``points`` columns (a GPU nothing runs on: its times are still thinned)."""
    if not layers:
        return np.zeros((0, points))
    return np.cumsum(np.vstack(layers), axis=0)


def stretch_starts(t: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Where in ``t`` (ascending) each stretch of time beginning at ``edges``
    (ascending) begins, once each: an empty stretch shares the next one's start,
    and one beginning after the last time has none. (``np.unique`` of the same
    sorted indices, without it: numpy 2's unique hashes its input, and its first
    call imports ``numpy.ma``, ~10 ms of a running window's worker holding the
    GIL, 85 ms where the modules are not compiled yet.)"""
    starts = np.searchsorted(t, edges, side="left")
    starts = starts[starts < len(t)]
    if len(starts) < 2:
        return starts
    first = np.empty(len(starts), dtype=bool)
    first[0] = True
    np.not_equal(starts[1:], starts[:-1], out=first[1:])
    return starts[first]


def thin(t: np.ndarray, tops: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``columns`` points, one per equal stretch of time: the peak of the
    samples in it (tops stay ordered, since a pointwise larger row has a larger peak)."""
    n = len(t)
    if n <= columns or columns < 2:
        return t, tops
    # columns of equal time, not of equal count: the store's older history has one
    # point per 10 s, the newest one per sample, and both get the same pixels per second
    edges = np.linspace(float(t[0]), float(t[-1]), columns, endpoint=False)
    starts = stretch_starts(t, edges)
    return t[starts], np.maximum.reduceat(tops, starts, axis=1)


def corners(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points a line through (t, v) turns at: the first and last of each run of
    equal values (and every n/a, which breaks the line). The polyline is the same;
    a GPU's capacity over 10 minutes is 2 points instead of 600 (a dashed line of
    600 segments cost a millisecond to paint)."""
    n = len(v)
    if n <= 2:
        return t, v
    keep = np.ones(n, dtype=bool)
    same = v[1:] == v[:-1]  # (n/a never equals: kept)
    keep[1:-1] = ~(same[:-1] & same[1:])
    return t[keep], v[keep]


def lines_drawn(alive: dict, ended: dict, must: set) -> list:
    """The lines style's curves: the LINE_CURVES largest now, those that must be
    seen (an alert, the selection), and the processes that ended most recently."""
    order = sorted(alive, key=lambda k: -alive[k])
    drawn = order[:LINE_CURVES] + [k for k in order[LINE_CURVES:] if k in must]
    return drawn + sorted(ended, key=lambda k: -ended[k])[:ENDED_CURVES]


def any_finite(times: np.ndarray, values: np.ndarray, since: float | None) -> bool:
    inside = values if since is None else values[times >= since]
    return bool(np.isfinite(inside).any())


def nanmax(values: np.ndarray, default: float) -> float:
    if not len(values):
        return default
    finite = values[np.isfinite(values)]
    return max(default, float(finite.max())) if len(finite) else default
