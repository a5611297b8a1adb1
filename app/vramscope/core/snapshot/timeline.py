"""The active-memory timeline as stacked series: the largest stacks each a band, the
others merged into one band so the bands always add up to the allocated total.

A band is a stack's live bytes over the trace (a cumulative sum of its allocations'
opens and closes). The trace is cut into at most ``points`` buckets; each bucket is
drawn at its highest entry (the instant of that bucket's highest total), so no peak
is lost to the downsampling and every drawn point is a real instant.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vramscope.core.snapshot.replay import START, DeviceReplay

BANDS = 8
SAMPLED = 8  # instants (besides the peak) whose largest stacks may get a band
POINTS = 2000


@dataclasses.dataclass(frozen=True)
class Timeline:
    entries: np.ndarray  # the entry drawn at each point (START first: before the trace)
    x: np.ndarray  # seconds since the first entry (or entry numbers without timestamps)
    total: np.ndarray  # allocated bytes at each point
    stacks: tuple[int, ...]  # the banded stacks, largest at the peak first
    bands: tuple[np.ndarray, ...]  # each stack's bytes at each point
    other: np.ndarray  # everything else: total - sum(bands)
    seconds: bool  # x is in seconds (False: entry numbers)

    def entry_at(self, x: float) -> int:
        """The entry a cursor at ``x`` stands on: the last drawn point at or before it."""
        i = int(np.searchsorted(self.x, x, side="right")) - 1
        return int(self.entries[max(i, 0)])


def drawn_entries(curve: np.ndarray, points: int) -> np.ndarray:
    """START, then each bucket's entry with the highest total (the first of equals)."""
    n = len(curve)
    if n <= points:
        return np.concatenate(([START], np.arange(n)))
    bucket = (np.arange(n) * points) // n
    order = np.lexsort((np.arange(n), -curve, bucket))  # by bucket, highest first, earliest first
    firsts = np.flatnonzero(np.r_[True, bucket[order][1:] != bucket[order][:-1]])
    return np.concatenate(([START], np.sort(order[firsts])))


def x_of(replay: DeviceReplay, entries: np.ndarray) -> tuple[np.ndarray, bool]:
    trace = replay.trace
    if not trace.timestamps or not len(trace):
        return entries.astype(np.float64), False
    t = trace.time_us
    x = (t[np.maximum(entries, 0)] - t[0]) / 1e6
    return x.astype(np.float64), True


def timeline(replay: DeviceReplay, bands: int = BANDS, points: int = POINTS) -> Timeline:
    n = len(replay.trace)
    entries = drawn_entries(replay.curve, points)
    total = np.where(
        entries == START, replay.base, replay.curve[np.maximum(entries, 0)] if n else replay.base
    )
    _peak, at = replay.peak()
    # candidates: the largest stacks at the peak and at a few instants across the trace
    # (a stack that peaks elsewhere -- gradients after the forward pass's peak -- gets a band)
    candidates: dict[int, None] = {}
    for i in [at, *entries[:: max(1, len(entries) // SAMPLED)].tolist()]:
        candidates.update((g[0], None) for g in replay.breakdown(i, bands).groups)
    a = replay.allocs
    curves = {stack: _curve(a, stack, entries, n) for stack in list(candidates)[: 4 * bands]}
    top = sorted(curves, key=lambda k: -int(curves[k].max()))[:bands]
    series = [curves[k] for k in top]
    other = total - (np.sum(series, axis=0) if series else 0)
    x, seconds = x_of(replay, entries)
    return Timeline(entries, x, total, tuple(top), tuple(series), other, seconds)


def _curve(a, stack: int, entries: np.ndarray, n: int) -> np.ndarray:
    """One stack's live bytes at the drawn entries."""
    mine = a.stack == stack
    delta = np.zeros(n + 1, dtype=np.int64)
    s, e = a.start[mine], a.end[mine]
    delta[s[s >= 0]] += a.size[mine][s >= 0]
    delta[e[e < n]] -= a.size[mine][e < n]
    base = int(a.size[mine & (a.start == START)].sum())
    curve = base + np.cumsum(delta[:n])
    return np.where(entries == START, base, curve[np.maximum(entries, 0)] if n else base)
