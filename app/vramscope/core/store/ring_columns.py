"""Many tiered rings held as columns: one slot per series, no object per series.

A ``RingColumns`` keeps what a ``TieredRing`` (core/store/ring.py) keeps -- the
newest ``fine_points`` raw samples, the coarse tier of per-bucket peaks made
when the fine ring first drops a sample, the open bucket -- for any number of
series, with the same arithmetic (the helpers of core/store/ring.py) and the same
answers. Slot ``i``'s state is element ``i`` of a few lists: its own numpy
arrays (which the garbage collector does not track) and plain numbers.

Why: a window of 16 GPUs x 1,024 processes holds 16k process series. As one
``TieredRing`` each they are 16k objects every full garbage collection walks
(CPython's collector visits every tracked container: see the ``gc`` module
documentation, https://docs.python.org/3/library/gc.html), ~8 ms of each full
collection; as columns they are a few lists.
"""

from __future__ import annotations

import math

import numpy as np

from vramscope.core.store.ring import fold_peaks, in_order, joined, loaded


def _push(ts: list, vs: list, starts: list, lens: list, slot: int, capacity: int, t: float, v: float) -> None:
    """``Ring.append`` on slot ``slot`` of one tier's columns."""
    tt, vv = ts[slot], vs[slot]
    size = tt.shape[0]
    n = lens[slot]
    if n == size < capacity:  # storage doubles up to the capacity, before the ring first fills
        size = min(capacity, 2 * size)
        tt, vv = np.empty(size), np.empty(size)
        tt[:n], vv[:n] = ts[slot], vs[slot]
        ts[slot], vs[slot] = tt, vv
    if n < size:
        i = (starts[slot] + n) % size
        lens[slot] = n + 1
    else:
        i = starts[slot]
        starts[slot] = (i + 1) % size
    tt[i] = t
    vv[i] = v


class RingColumns:
    """Tiered rings by slot (``add`` gives one, ``drop`` frees it for reuse)."""

    __slots__ = (
        "_cap", "_ccap", "_step",
        "_ft", "_fv", "_fstart", "_flen",
        "_ct", "_cv", "_cstart", "_clen",
        "_bucket", "_peak", "_bucket_t", "_free",
    )  # fmt: skip

    def __init__(self, fine_points: int = 7200, coarse_step: float = 10.0, coarse_points: int = 17280):
        if fine_points < 1 or coarse_points < 1:
            raise ValueError("capacity must be >= 1")
        self._cap, self._ccap, self._step = fine_points, coarse_points, float(coarse_step)
        self._ft: list = []  # fine tier: times, values (None: a free slot), start, length
        self._fv: list = []
        self._fstart: list[int] = []
        self._flen: list[int] = []
        self._ct: list = []  # coarse tier: the same, None until made
        self._cv: list = []
        self._cstart: list[int] = []
        self._clen: list[int] = []
        self._bucket: list = []  # index of the open coarse bucket (None: none yet), its peak and time
        self._peak: list[float] = []
        self._bucket_t: list[float] = []
        self._free: list[int] = []

    # -- slots -------------------------------------------------------------------------
    def add(self) -> int:
        """A new empty series; its slot."""
        size = min(self._cap, 64)
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._ft)
            for column in self._columns():
                column.append(None)
        self._ft[slot], self._fv[slot] = np.empty(size), np.empty(size)
        self._fstart[slot] = self._flen[slot] = self._cstart[slot] = self._clen[slot] = 0
        self._ct[slot] = self._cv[slot] = self._bucket[slot] = None
        self._peak[slot] = self._bucket_t[slot] = math.nan
        return slot

    def drop(self, slot: int) -> None:
        """Forget a series (its slot is reused by a later ``add``)."""
        self._ft[slot] = self._fv[slot] = self._ct[slot] = self._cv[slot] = None
        self._free.append(slot)

    def adopt(self, slot: int, state: tuple) -> None:
        """Take over a filled ring's storage (``TieredRing.state``: a reopened session)."""
        (ft, fv, fstart, flen), coarse, (bucket, peak, bucket_t) = state
        self._ft[slot], self._fv[slot], self._fstart[slot], self._flen[slot] = ft, fv, fstart, flen
        if coarse is None:
            self._ct[slot] = self._cv[slot] = None
            self._cstart[slot] = self._clen[slot] = 0
        else:
            self._ct[slot], self._cv[slot], self._cstart[slot], self._clen[slot] = coarse
        self._bucket[slot], self._peak[slot], self._bucket_t[slot] = bucket, peak, bucket_t

    def _columns(self) -> tuple[list, ...]:
        return (
            self._ft, self._fv, self._fstart, self._flen, self._ct, self._cv,
            self._cstart, self._clen, self._bucket, self._peak, self._bucket_t,
        )  # fmt: skip

    # -- writing -----------------------------------------------------------------------
    def append(self, slot: int, t: float, v: float | None) -> None:
        self.extend((slot,), t, (v,))

    def extend(self, slots, t: float, values) -> None:
        """One sample at time ``t`` for each slot (``values[i]`` for ``slots[i]``;
        None: n/a), as ``TieredRing.append`` would take them one by one."""
        nan, cap = math.nan, self._cap
        ft, fv, flen, ct = self._ft, self._fv, self._flen, self._ct
        for slot, v in zip(slots, values):
            value = nan if v is None else float(v)
            if ct[slot] is None:
                n = flen[slot]
                if n < cap:  # every raw sample still held: no tier to keep yet
                    tt = ft[slot]
                    if n == tt.shape[0]:
                        _push(ft, fv, self._fstart, flen, slot, cap, t, value)
                    else:  # (the ring has not wrapped: it starts at 0)
                        tt[n] = t
                        fv[slot][n] = value
                        flen[slot] = n + 1
                    continue
                self._make_coarse(slot)  # the oldest is about to go: its peak goes on in the coarse tier
            self._append_tiered(slot, t, value)

    def _make_coarse(self, slot: int) -> None:
        """``TieredRing.coarse``: the raw samples folded into their buckets' peaks."""
        ct, cv, bucket = fold_peaks(*self._fine(slot), self._step)
        self._ct[slot], self._cv[slot], self._clen[slot] = loaded(ct, cv, self._ccap)
        self._cstart[slot] = 0
        if bucket is not None:
            self._bucket[slot], self._bucket_t[slot], self._peak[slot] = bucket, float(ct[-1]), float(cv[-1])

    def _append_tiered(self, slot: int, t: float, value: float) -> None:
        _push(self._ft, self._fv, self._fstart, self._flen, slot, self._cap, t, value)
        bucket = math.floor(t / self._step)
        if bucket != self._bucket[slot]:
            self._bucket[slot], self._peak[slot], self._bucket_t[slot] = bucket, value, t
            _push(self._ct, self._cv, self._cstart, self._clen, slot, self._ccap, t, value)
            return
        peak = self._peak[slot]
        if math.isnan(peak) or (not math.isnan(value) and value > peak):
            peak = self._peak[slot] = value
        ct, cv = self._ct[slot], self._cv[slot]
        i = (self._cstart[slot] + self._clen[slot] - 1) % ct.shape[0]  # Ring.replace_last
        ct[i] = self._bucket_t[slot]
        cv[i] = peak

    # -- reading -----------------------------------------------------------------------
    def _fine(self, slot: int) -> tuple[np.ndarray, np.ndarray]:
        return in_order(self._ft[slot], self._fv[slot], self._fstart[slot], self._flen[slot])

    def _coarse(self, slot: int) -> tuple[np.ndarray, np.ndarray]:
        return in_order(self._ct[slot], self._cv[slot], self._cstart[slot], self._clen[slot])

    def last(self, slot: int) -> tuple[float, float] | None:
        """The newest (time, value) of a series, None when it has none."""
        n = self._flen[slot]
        if not n:
            return None
        tt = self._ft[slot]
        i = (self._fstart[slot] + n - 1) % tt.shape[0]
        return float(tt[i]), float(self._fv[slot][i])

    def last_time(self, slot: int) -> float | None:
        last = self.last(slot)
        return None if last is None else last[0]

    def arrays(self, slot: int, since: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``TieredRing.arrays``: coarse peaks for the span the fine ring no longer
        holds, then raw samples (copies)."""
        made = self._ct[slot] is not None and self._clen[slot]
        coarse = (lambda: self._coarse(slot)) if made else None
        return joined(*self._fine(slot), coarse, self._step, since)

    def nbytes(self, slot: int | None = None) -> int:
        """The arrays' bytes of one series (None: of all)."""
        if slot is None:
            return sum(self.nbytes(s) for s, ft in enumerate(self._ft) if ft is not None)
        n = self._ft[slot].nbytes + self._fv[slot].nbytes
        if self._ct[slot] is not None:
            n += self._ct[slot].nbytes + self._cv[slot].nbytes
        return n

    def __len__(self) -> int:
        """Series held."""
        return len(self._ft) - len(self._free)
