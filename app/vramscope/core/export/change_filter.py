"""Which samples of a counter track a trace needs (core/export/trace_export.py).

Counters are step functions in a trace: a sample is written when its value
changes, when its series comes back after a gap, and at the series' last
sample, so the track ends where the data ends.
"""

from __future__ import annotations

import numpy as np


class ChangeFilter:
    """Keeps, per series, the samples a step-function counter needs.

    A sample is kept when the value changed, when the series comes back after
    a gap, and (at ``finish``) the last sample of a series whose value had not
    changed since its last kept one, so the track ends where the data ends.
    Series are int64 ids; ticks index the session's pass times.
    """

    def __init__(self, n_ticks: int):
        self.n_ticks = n_ticks
        self.last_tick: dict[int, int] = {}
        self.last_val: dict[int, float] = {}
        self.emitted_tick: dict[int, int] = {}
        self.gaps: list[tuple[int, int]] = []  # (sid, first tick it was missing)

    def __call__(self, sid: np.ndarray, tick: np.ndarray, val: np.ndarray) -> np.ndarray:
        if not len(sid):
            return np.empty(0, np.int64)
        order = np.lexsort((tick, sid))
        s, k, v = sid[order], tick[order], val[order]
        first = np.concatenate(([True], s[1:] != s[:-1]))
        starts = np.flatnonzero(first)
        prev_k = np.concatenate(([-2], k[:-1]))
        prev_v = np.concatenate(([np.nan], v[:-1]))
        for i in starts:  # state carried from earlier chunks (one entry per series)
            key = int(s[i])
            prev_k[i] = self.last_tick.get(key, -2)
            prev_v[i] = self.last_val.get(key, np.nan)
        gap = k != prev_k + 1
        same = (v == prev_v) | (np.isnan(v) & np.isnan(prev_v))
        keep = (gap | ~same) & ~np.isnan(v)
        for i in np.flatnonzero(gap & (prev_k >= 0)):
            self.gaps.append((int(s[i]), int(prev_k[i]) + 1))
        ends = np.concatenate((starts[1:], [len(s)])) - 1
        kept_tick = np.maximum.reduceat(np.where(keep, k, -1), starts)
        for i, j, kt in zip(starts, ends, kept_tick):
            key = int(s[i])
            self.last_tick[key] = int(k[j])
            self.last_val[key] = float(v[j])
            if kt >= 0:
                self.emitted_tick[key] = int(kt)
        return order[keep]

    def take_gaps(self) -> list[tuple[int, int]]:
        gaps, self.gaps = self.gaps, []
        return gaps

    def finish(self) -> tuple[list, list]:
        """(closing samples (sid, tick, value), ends (sid, tick after the last sample))."""
        closing = [
            (sid, k, self.last_val[sid])
            for sid, k in self.last_tick.items()
            if self.emitted_tick.get(sid, -1) < k and not np.isnan(self.last_val[sid])
        ]
        ends = [(sid, k + 1) for sid, k in self.last_tick.items() if k + 1 < self.n_ticks]
        return closing, ends
