"""The allocator's own picture: a memory snapshot's segments and blocks, summarised.

Input is ``torch.cuda.memory_snapshot()``'s list of segments (or the
``segments`` of ``torch.cuda.memory._snapshot()``), in the format PyTorch
documents in ``torch.cuda.memory._snapshot`` and "Understanding CUDA Memory
Usage" (pytorch.org/docs/stable/torch_cuda_memory.html): each segment one
cudaMalloc (or one expandable segment) with ``total_size``, ``stream``,
``segment_type``, ``segment_pool_id`` and its ``blocks`` in address order,
each block ``active_allocated``, ``active_awaiting_free`` or ``inactive``.

The figures the monitor shows come from here:

- reserved - allocated, split in two: *free inside partly used segments*
  (fragmentation -- ``torch.cuda.empty_cache()`` cannot return it, a block
  larger than the largest free piece cannot use it) and *whole free segments*
  (``empty_cache()`` would return them; the allocator itself frees them and
  retries before it raises an OOM);
- the largest free block, against the largest allocation live now (the
  largest request the agent has seen recently: with history off a snapshot
  names no requests, only what is still alive);
- private pools (CUDA graphs, ``torch.compile`` with cudagraphs,
  ``torch.cuda.MemPool``: every ``segment_pool_id`` other than (0, 0)) as their
  own bucket -- their free space belongs to the graph that owns them;
- what ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` would recover:
  with expandable segments the allocator maps physical memory in pages
  (2 MiB for the small pool, 20 MiB for the large one, as
  CUDACachingAllocator.cpp's kSmallBuffer / kLargeBuffer) and can unmap the
  pages of a free block and map them again where a large block needs them,
  so what it recovers is the whole pages (counted from the segment's start)
  inside free blocks of partly used segments -- counted here from the blocks'
  offsets, not from a rule of thumb.

The summary sent to the monitor is bounded: at most MAX_SEGMENTS segments
(the largest, and always the one holding the largest free block), each with
at most 2 * MAX_BLOCKS + 1 runs of blocks (the largest blocks kept, the
others between them merged). Standard library only (runs inside training).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# a segment (or a block) of a snapshot, as torch gives it: a dict its documentation
# describes, read key by key with a default
SnapshotEntry = dict[str, Any]

MiB = 1024 * 1024
SMALL_PAGE = 2 * MiB  # kSmallBuffer
LARGE_PAGE = 20 * MiB  # kLargeBuffer
MAX_SEGMENTS = 40
MAX_BLOCKS = 16

# a run of blocks in the map: (state, bytes)
ALLOCATED = "allocated"
AWAITING = "awaiting_free"  # freed on one stream, still in use on another
FREE_SPLIT = "free_split"  # free inside a partly used segment: fragmentation
FREE_SEGMENT = "free_segment"  # a whole segment free: empty_cache() returns it
MIXED = "mixed"  # several small blocks merged for the map
STATES = (ALLOCATED, AWAITING, FREE_SPLIT, FREE_SEGMENT, MIXED)
_STATE_OF: dict[object, str] = {"active_allocated": ALLOCATED, "active_awaiting_free": AWAITING}

DEFAULT_POOL = (0, 0)
# the figures of a device's summary (bytes; segments and map_left_out are counts)
FIGURES = (
    "segments",
    "reserved",
    "allocated",
    "awaiting_free",
    "free_split",
    "free_segments",
    "largest_free_block",
    "largest_request",
    "expandable_recovers",
    "map_left_out",
    "map_left_out_bytes",
)


class SnapshotUnavailable(Exception):
    """The snapshot cannot be taken here; the message says why (one line)."""


def _pool_of(seg: SnapshotEntry) -> tuple[Any, Any]:
    pool = seg.get("segment_pool_id")
    if isinstance(pool, (list, tuple)) and len(pool) == 2:
        return (pool[0], pool[1])
    return DEFAULT_POOL


def _page_of(seg: SnapshotEntry) -> int:
    return SMALL_PAGE if seg.get("segment_type") == "small" else LARGE_PAGE


def whole_pages(address: int, size: int, page: int) -> int:
    """Bytes of the pages of ``page`` bytes lying wholly inside [address, address + size)."""
    first = -(-address // page) * page
    last = (address + size) // page * page
    return max(0, last - first)


def _runs(blocks: list[SnapshotEntry], whole_free: bool) -> list[list[Any]]:
    """A segment's blocks as map runs [state, bytes], bounded: the MAX_BLOCKS largest
    kept as they are, the blocks between them merged into one run each."""
    free_state = FREE_SEGMENT if whole_free else FREE_SPLIT
    runs: list[list[Any]] = []  # [state, bytes]
    for b in blocks:
        state = _STATE_OF.get(b.get("state"), free_state)
        size = int(b.get("size") or 0)
        if runs and runs[-1][0] == state:
            runs[-1][1] += size
        else:
            runs.append([state, size])
    if len(runs) <= 2 * MAX_BLOCKS + 1:
        return runs
    keep = set(sorted(range(len(runs)), key=lambda i: runs[i][1], reverse=True)[:MAX_BLOCKS])
    out: list[list[Any]] = []
    merging = False
    for i, run in enumerate(runs):
        if i in keep:
            out.append(list(run))
            merging = False
        elif merging:
            last = out[-1]
            if last[0] != run[0]:
                last[0] = MIXED
            last[1] += run[1]
        else:
            out.append(list(run))
            merging = True
    return out


def summarize(
    segments: Iterable[object] | None,
    device: str | None = None,
    largest_request: int | None = None,
    expandable: bool | None = None,
) -> dict[str, Any]:
    """The figures of one device's segments (the caller picks the device's segments).

    ``largest_request``: the largest allocation the agent saw recently (it keeps the
    maximum of the live allocations over recent snapshots, and an OOM's request);
    ``expandable``: whether the process runs with expandable segments already (then
    nothing more is recovered by turning them on)."""
    reserved = allocated = awaiting = free_split = free_whole = recoverable = 0
    largest_free = largest_live = 0
    pool_reserved = pool_allocated = pool_segments = 0
    segments_seen = 0
    largest_free_at = -1
    # (total, index, seg, whole_free, largest free, pool)
    bars: list[tuple[int, int, SnapshotEntry, bool, int, tuple[Any, Any]]] = []
    for index, seg in enumerate(segments or ()):
        if not isinstance(seg, dict):
            continue
        segments_seen += 1
        total = int(seg.get("total_size") or 0)
        blocks = seg.get("blocks") or ()
        seg_alloc = seg_await = seg_free = seg_largest = seg_pages = offset = 0
        page = _page_of(seg)  # expandable segments map pages from the segment's start
        for b in blocks:
            state = b.get("state")
            size = b.get("size") or 0
            if state == "active_allocated":
                seg_alloc += size
                if size > largest_live:  # (a request is at most its block)
                    req = b.get("requested_size") or size
                    if req > largest_live:
                        largest_live = req
            elif state == "active_awaiting_free":
                seg_await += size
            else:
                seg_free += size
                if size > seg_largest:
                    seg_largest = size
                if size >= page:  # whole_pages(offset, size, page), inlined (the hot loop)
                    first = -(-offset // page) * page
                    last = (offset + size) // page * page
                    if last > first:
                        seg_pages += last - first
            offset += size
        if not blocks:  # a segment listed without its blocks: its own figures
            seg_alloc = int(seg.get("allocated_size") or 0)
            seg_free = total - seg_alloc
        whole = seg_alloc == 0 and seg_await == 0
        pool = _pool_of(seg)
        reserved += total
        allocated += seg_alloc
        awaiting += seg_await
        if pool != DEFAULT_POOL:
            pool_reserved += total
            pool_allocated += seg_alloc
            pool_segments += 1
        elif whole:
            free_whole += total
        else:
            free_split += seg_free
            recoverable += seg_pages
        if seg_largest > largest_free and pool == DEFAULT_POOL:
            largest_free = seg_largest
            largest_free_at = index
        bars.append((total, index, seg, whole, seg_largest, pool))
    if largest_request is None or largest_live > largest_request:
        largest_request = largest_live or None
    bars.sort(key=lambda b: (b[0], -b[1]), reverse=True)
    shown = bars[:MAX_SEGMENTS]
    if largest_free_at >= 0 and all(b[1] != largest_free_at for b in shown):
        shown[-1:] = [next(b for b in bars if b[1] == largest_free_at)]
    out_segments: list[dict[str, Any]] = [
        {
            "size": total,
            "stream": seg.get("stream"),
            "type": seg.get("segment_type"),
            "pool": None if pool == DEFAULT_POOL else list(pool),
            "largest_free": largest or None,
            "runs": _runs(list(seg.get("blocks") or ()), whole),
        }
        for total, _i, seg, whole, largest, pool in shown
    ]
    left_out = bars[MAX_SEGMENTS:] if len(bars) > MAX_SEGMENTS else []
    return {
        "device": device,
        "segments": segments_seen,
        "reserved": reserved,
        "allocated": allocated,
        "awaiting_free": awaiting,
        "free_split": free_split,  # fragmentation: empty_cache() cannot return it
        "free_segments": free_whole,  # empty_cache() would return it
        "largest_free_block": largest_free if segments_seen else None,
        "largest_request": largest_request,
        "private_pools": {"reserved": pool_reserved, "allocated": pool_allocated, "segments": pool_segments}
        if pool_segments
        else None,
        "expandable_recovers": None if expandable else recoverable,
        "map": out_segments,
        "map_left_out": len(left_out) if segments_seen > len(out_segments) else 0,
        "map_left_out_bytes": sum(b[0] for b in bars) - sum(s["size"] for s in out_segments),
    }


def by_device(segments: Iterable[object] | None) -> dict[object, list[SnapshotEntry]]:
    """Segments grouped by their ``device`` index (a segment without one: device 0)."""
    out: dict[object, list[SnapshotEntry]] = {}
    for seg in segments or ():
        if isinstance(seg, dict):
            out.setdefault(seg.get("device", 0), []).append(seg)
    return out
