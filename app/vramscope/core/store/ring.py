"""Bounded numpy ring buffers with a coarser tier.

A ``TieredRing`` keeps the newest ``fine_points`` samples as they came, and
folds every sample into fixed buckets of ``coarse_step`` seconds that keep the
*peak* of the bucket (for memory the peak is the figure that matters: it is
what hits the capacity line). A 24-hour session therefore costs a fixed,
known amount of memory, while the last minutes stay at full resolution.

Values are float64; ``NaN`` stands for "not available" inside the arrays
(the frozen samples use ``None``).
"""

from __future__ import annotations

import math

import numpy as np


_INITIAL = 64


class Ring:
    """A bounded ring of (time, value) pairs.

    Storage starts small and doubles up to ``capacity``, so a short-lived
    process series does not cost a full day of preallocated arrays.
    """

    __slots__ = ("_t", "_v", "_start", "_len", "_capacity")

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._capacity = capacity
        size = min(capacity, _INITIAL)
        self._t = np.empty(size, dtype=np.float64)
        self._v = np.empty(size, dtype=np.float64)
        self._start = 0
        self._len = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return self._len

    def _grow(self) -> None:
        # Only called before the ring first fills, so the data starts at 0.
        size = min(self._capacity, 2 * self._t.shape[0])
        t = np.empty(size, dtype=np.float64)
        v = np.empty(size, dtype=np.float64)
        t[: self._len] = self._t[: self._len]
        v[: self._len] = self._v[: self._len]
        self._t, self._v = t, v

    def append(self, t: float, v: float) -> None:
        if self._len == self._t.shape[0] < self._capacity:
            self._grow()
        cap = self._t.shape[0]
        if self._len < cap:
            i = (self._start + self._len) % cap
            self._len += 1
        else:
            i = self._start
            self._start = (self._start + 1) % cap
        self._t[i] = t
        self._v[i] = v

    def load(self, t: np.ndarray, v: np.ndarray) -> None:
        """Replace the contents with the newest ``capacity`` points of (t, v)."""
        self._t, self._v, self._len = loaded(t, v, self._capacity)
        self._start = 0

    def replace_last(self, t: float, v: float) -> None:
        i = (self._start + self._len - 1) % self._t.shape[0]
        self._t[i] = t
        self._v[i] = v

    def last(self) -> tuple[float, float] | None:
        if not self._len:
            return None
        i = (self._start + self._len - 1) % self._t.shape[0]
        return float(self._t[i]), float(self._v[i])

    def first_time(self) -> float | None:
        return float(self._t[self._start]) if self._len else None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies in time order."""
        return in_order(self._t, self._v, self._start, self._len)

    def state(self) -> tuple:
        """(times, values, start, length): the storage itself, not a copy."""
        return self._t, self._v, self._start, self._len

    @property
    def nbytes(self) -> int:
        return self._t.nbytes + self._v.nbytes


class TieredRing(Ring):
    """A ring of raw samples (the fine tier: the Ring itself) + a coarse ring of
    per-bucket peaks.

    The coarse tier is made when first needed -- when the fine ring is about
    to drop its oldest sample, or when read -- by folding the raw samples into
    their buckets; until then it would only repeat them (half the work per
    sample for most of a session's first two hours). The store keeps its
    process series as columns with the same arithmetic (core/store/ring_columns.py)."""

    __slots__ = ("_coarse", "_coarse_points", "coarse_step", "_bucket", "_bucket_peak", "_bucket_t")

    def __init__(self, fine_points: int = 7200, coarse_step: float = 10.0, coarse_points: int = 17280):
        super().__init__(fine_points)
        self._coarse: Ring | None = None  # made by ``coarse``
        self._coarse_points = coarse_points
        self.coarse_step = float(coarse_step)
        self._bucket: float | None = None  # index of the open coarse bucket
        self._bucket_peak = math.nan
        self._bucket_t = math.nan

    @property
    def coarse(self) -> Ring:
        """The per-bucket peaks (made from the raw samples on first use)."""
        if self._coarse is None:
            coarse = Ring(self._coarse_points)
            ct, cv, bucket = fold_peaks(*Ring.arrays(self), self.coarse_step)
            if bucket is not None:
                coarse.load(ct, cv)
                self._bucket, self._bucket_t, self._bucket_peak = bucket, float(ct[-1]), float(cv[-1])
            self._coarse = coarse
        return self._coarse

    def append(self, t: float, v: float | None) -> None:
        value = math.nan if v is None else float(v)
        if self._coarse is None:
            if self._len < self._capacity:
                Ring.append(self, t, value)  # every raw sample still held: no tier to keep yet
                return
            self.coarse  # the oldest is about to go: its peak goes on in the coarse tier
        Ring.append(self, t, value)
        bucket = math.floor(t / self.coarse_step)
        if bucket != self._bucket:
            self._bucket = bucket
            self._bucket_peak = value
            self._bucket_t = t
            self._coarse.append(t, value)
        else:
            if math.isnan(self._bucket_peak) or (not math.isnan(value) and value > self._bucket_peak):
                self._bucket_peak = value
            self._coarse.replace_last(self._bucket_t, self._bucket_peak)

    def load(self, fine_t, fine_v, coarse_t, coarse_v) -> None:
        """Fill from stored history (a reopened session): raw points and bucket peaks."""
        Ring.load(self, fine_t, fine_v)
        self._coarse = Ring(self._coarse_points)
        self._coarse.load(coarse_t, coarse_v)
        self._bucket, self._bucket_peak, self._bucket_t = None, math.nan, math.nan
        if len(coarse_t):
            self._bucket = math.floor(float(coarse_t[-1]) / self.coarse_step)
            self._bucket_t = float(coarse_t[-1])
            self._bucket_peak = float(coarse_v[-1])

    def last_time(self) -> float | None:
        last = self.last()
        return None if last is None else last[0]

    def arrays(self, since: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Coarse peaks for the span the fine ring no longer holds, then raw samples."""
        coarse = self._coarse.arrays if self._coarse is not None and len(self._coarse) else None
        return joined(*Ring.arrays(self), coarse, self.coarse_step, since)

    def state(self) -> tuple:
        """The fine ring's ``Ring.state``, the coarse ring's (None until made), and
        the open bucket (index, peak, time): what a columnar copy needs."""
        coarse = None if self._coarse is None else self._coarse.state()
        return Ring.state(self), coarse, (self._bucket, self._bucket_peak, self._bucket_t)

    @property
    def nbytes(self) -> int:
        return self._t.nbytes + self._v.nbytes + (self._coarse.nbytes if self._coarse is not None else 0)


# -- the arithmetic of the tiers, shared with core/store/ring_columns.py ---------------------
def in_order(t: np.ndarray, v: np.ndarray, start: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Copies of a ring's ``n`` points from ``start`` on, in time order."""
    cap = t.shape[0]
    end = start + n
    if end <= cap:
        return t[start:end].copy(), v[start:end].copy()
    k = end - cap
    return np.concatenate((t[start:], t[:k])), np.concatenate((v[start:], v[:k]))


def loaded(t: np.ndarray, v: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray, int]:
    """New storage holding the newest ``capacity`` points of (t, v) from index 0."""
    n = min(len(t), capacity)
    size = max(min(capacity, _INITIAL), n)
    nt = np.empty(size, dtype=np.float64)
    nv = np.empty(size, dtype=np.float64)
    nt[:n] = t[len(t) - n :]
    nv[:n] = v[len(v) - n :]
    return nt, nv, n


def fold_peaks(ft: np.ndarray, fv: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Raw samples folded into their buckets of ``step`` seconds: each bucket's
    first time and peak, and the newest bucket's index (None: no samples)."""
    if not len(ft):
        return ft, fv, None
    bucket = np.floor(ft / step)
    starts = np.flatnonzero(np.concatenate(([True], bucket[1:] != bucket[:-1])))
    peaks = np.fmax.reduceat(fv, starts)  # n/a is no peak; an all-n/a bucket stays n/a
    return ft[starts], peaks, float(bucket[-1])


def joined(ft, fv, coarse, step: float, since: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Coarse peaks for the span the raw samples (ft, fv) no longer hold, then
    the raw samples, from ``since`` on. ``coarse``: a callable giving the coarse
    tier's (t, v) in time order (read only when needed), or None."""
    if coarse is not None and len(ft) and (since is None or since < ft[0]):
        ct, cv = coarse()
        # Every bucket that began before the oldest raw sample: its peak may
        # come from a sample already evicted from the fine ring, so a bucket
        # that straddles ft[0] is kept too (a peak is never dropped).
        keep = ct < ft[0]
        if since is not None:
            keep &= ct >= since - step
        t = np.concatenate((ct[keep], ft))
        v = np.concatenate((cv[keep], fv))
    else:
        t, v = ft, fv
    if since is not None and len(t) and t[0] < since:
        i = int(np.searchsorted(t, since, side="left"))
        i = max(0, i - 1)  # keep one point before the window so the line enters it
        t, v = t[i:], v[i:]
    return t, v
