"""Replay a device's trace: the allocations as intervals, the allocated curve, its peak,
and what was alive at any instant grouped by stack.

As memory_viz's "Active Memory Timeline" (``torch/utils/viz/MemoryViz.js``,
``process_alloc_data``): an ``alloc`` opens an allocation and the
``free_completed`` of its address closes it; a ``free_completed`` with no
``alloc`` before it in the trace closes an allocation made before the trace
began (alive from the start); an ``active_allocated`` block of the snapshot's
segments that no trace allocation still open accounts for was also alive from
the start, to the end. Instants are entry numbers: "at entry i" is the state
after entry i; -1 is the start, before the first entry.

Pairing is done with numpy (entries sorted by address, then by number), the
curve is a cumulative sum, and the state at an instant is one mask over the
allocations: no Python loop runs per entry here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vramscope.core.snapshot import columns as C
from vramscope.core.snapshot.pairing import pair

START = -1


@dataclasses.dataclass
class Intervals:
    """Allocations: alive after entry ``start`` (START: from the start) up to entry ``end``
    (exclusive: freed by that entry; ``n``: alive at the end)."""

    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    stack: np.ndarray
    addr: np.ndarray

    def alive(self, at: int) -> np.ndarray:
        return (self.start <= at) & (self.end > at)


def _intervals(trace: C.DeviceTrace, open_code: int, close_code: int, initial_blocks) -> Intervals:
    """``initial_blocks``: (address, size, stack) of what the snapshot holds at its end."""
    n = len(trace)
    opens, closes, orphans, still_open = pair(trace.action, trace.addr, open_code, close_code)
    open_now = set(trace.addr[still_open].tolist())
    before = [(a, s, k) for a, s, k in initial_blocks if a not in open_now]
    ba = np.array([b[0] for b in before], dtype=np.int64)
    parts = [
        (opens, closes, trace.size[opens], trace.stack[opens], trace.addr[opens]),
        (
            still_open,
            np.full(len(still_open), n),
            trace.size[still_open],
            trace.stack[still_open],
            trace.addr[still_open],
        ),
        (
            np.full(len(orphans), START),
            orphans,
            trace.size[orphans],
            trace.stack[orphans],
            trace.addr[orphans],
        ),
        (
            np.full(len(before), START),
            np.full(len(before), n),
            np.array([b[1] for b in before], dtype=np.int64),
            np.array([b[2] for b in before], dtype=np.int32),
            ba,
        ),
    ]
    return Intervals(*(np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(5)))


@dataclasses.dataclass
class Breakdown:
    """What was alive at one instant, grouped by stack, largest first."""

    at: int  # entry number (START: before the trace)
    time_us: int | None
    total: int
    groups: list[tuple[int, int, int]]  # (stack id, bytes, count)
    stacks: int  # how many stacks had something alive (groups may list only the largest)
    allocations: int


class DeviceReplay:
    """One device's allocations over its trace."""

    def __init__(self, snap: C.Snapshot, device: int):
        self.snap, self.device = snap, device
        self.trace = trace = snap.trace(device)
        codes = {a: i for i, a in enumerate(snap.actions)}
        segments = snap.device_segments(device)
        blocks = [
            (int(b.get("address") or 0), int(b.get("size") or 0), b.get("stack", 0))
            for seg in segments
            for b in seg["blocks"]
            if b.get("state") == "active_allocated"
        ]
        self.allocs = _intervals(trace, codes[C.ALLOC], codes[C.FREE_COMPLETED], blocks)
        seg_blocks = [(int(s.get("address") or 0), int(s.get("total_size") or 0), 0) for s in segments]
        self.segments = _intervals(trace, codes[C.SEGMENT_ALLOC], codes[C.SEGMENT_FREE], seg_blocks)
        n = len(trace)
        delta = np.zeros(n + 1, dtype=np.int64)
        a = self.allocs
        # an entry opens or closes at most one allocation: plain assignment, no collisions
        starts, ends = a.start >= 0, a.end < n
        delta[a.start[starts]] += a.size[starts]
        delta[a.end[ends]] -= a.size[ends]
        self.base = int(a.size[a.start == START].sum())
        self.curve = self.base + np.cumsum(delta[:n])  # allocated bytes after each entry
        self.sorted_times = bool(n == 0 or np.all(np.diff(trace.time_us) >= 0))
        self._first: np.ndarray | None = None  # per stack id, its first allocation (first_rows)

    def peak(self) -> tuple[int, int]:
        """(bytes, entry): the highest allocated bytes and the first entry reaching them
        (START where nothing in the trace went above what was there before it)."""
        if not len(self.curve) or int(self.curve.max()) <= self.base:
            return self.base, START
        i = int(np.argmax(self.curve))
        return int(self.curve[i]), i

    def time_of(self, at: int) -> int | None:
        return int(self.trace.time_us[at]) if 0 <= at < len(self.trace) else None

    def index_at(self, time_us: int) -> int:
        """The last entry at or before ``time_us`` (START: before the first)."""
        t = self.trace.time_us
        if self.sorted_times:
            return int(np.searchsorted(t, time_us, side="right")) - 1
        hits = np.flatnonzero(t <= time_us)
        return int(hits[-1]) if len(hits) else START

    def breakdown(self, at: int, top: int | None = None) -> Breakdown:
        """What was alive after entry ``at`` by stack, largest first (the ``top`` largest
        where given; ``Breakdown.stacks`` counts them all)."""
        a = self.allocs
        mask = a.alive(at)
        stacks = a.stack[mask]
        sizes = a.size[mask]
        if not len(stacks):
            return Breakdown(at, self.time_of(at), 0, [], 0, 0)
        # stack ids are dense (interned from 0): a count per id, no sort; float sums of
        # whole bytes are exact below 2**53 (8 PiB)
        total = np.rint(np.bincount(stacks, weights=sizes)).astype(np.int64)
        count = np.bincount(stacks)
        ids = ids_all = np.flatnonzero(count)
        # equal bytes: in the order of each stack's first row in the allocations' table (the
        # trace's allocations in order, then those alive from the start) -- not by stack id,
        # the reader's own label: the native and the pure-Python reader number them apart
        first = self.first_rows()
        if top is not None and top <= 0:
            ids = ids[:0]
        elif top is not None and len(ids) > top:
            t = total[ids]
            kth = np.partition(t, len(t) - top)[len(t) - top]  # the top-th largest
            tied = ids[t == kth]
            above = ids[t > kth]
            tied = tied[np.argsort(first[tied], kind="stable")][: top - len(above)]
            ids = np.concatenate([above, tied])
        ids = ids[np.lexsort((first[ids], -total[ids]))]
        groups = list(zip(ids.tolist(), total[ids].tolist(), count[ids].tolist()))
        return Breakdown(at, self.time_of(at), int(sizes.sum()), groups, len(ids_all), len(stacks))

    def first_rows(self) -> np.ndarray:
        """Per stack id, the first allocation row that holds it (computed once: ~40 ms for
        10 million allocations)."""
        if self._first is None:
            stack = self.allocs.stack
            rows = len(stack)
            first = np.full(int(stack.max()) + 1 if rows else 0, rows, dtype=np.int64)
            np.minimum.at(first, stack, np.arange(rows, dtype=np.int64))
            self._first = first
        return self._first

    def segments_at(self, at: int) -> list[dict]:
        """The segments alive at an instant, each with its blocks then (allocated and the
        gaps between them free), as Segment dicts for agent/segments.summarize.

        Segments come and go with ``segment_alloc`` / ``segment_free``; those of the
        snapshot that no trace entry made were there from the start. An expandable
        segment's ``segment_map`` / ``segment_unmap`` (pages mapped into its address
        range) are not replayed: it is drawn at its size in the snapshot throughout."""
        s, a = self.segments, self.allocs
        seg_rows = np.flatnonzero(s.alive(at))
        live = a.alive(at)
        addr, size = a.addr[live], a.size[live]
        order = np.argsort(addr)
        addr, size = addr[order], size[order]
        kinds = {int(x.get("address") or 0): x for x in self.snap.device_segments(self.device)}
        out = []
        for r in seg_rows:
            base, total = int(s.addr[r]), int(s.size[r])
            lo, hi = np.searchsorted(addr, base), np.searchsorted(addr, base + total)
            blocks, offset = [], base
            for ba, bs in zip(addr[lo:hi].tolist(), size[lo:hi].tolist()):
                if ba > offset:
                    blocks.append({"address": offset, "size": ba - offset, "state": "inactive"})
                blocks.append({"address": ba, "size": bs, "state": "active_allocated"})
                offset = max(offset, ba + bs)
            if offset < base + total:
                blocks.append({"address": offset, "size": base + total - offset, "state": "inactive"})
            known = kinds.get(base, {})
            out.append(
                {
                    "address": base,
                    "total_size": total,
                    "segment_type": known.get("segment_type", "large" if total > 1 << 20 else "small"),
                    "segment_pool_id": known.get("segment_pool_id", C.DEFAULT_POOL),
                    "stream": known.get("stream", 0),
                    "blocks": blocks,
                }
            )
        return out
