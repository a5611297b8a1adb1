"""The demo's allocator snapshots: segments laid out to match a scripted run's figures.

A run's allocated, reserved and inactive split (sources/demo/demo_runs.py) become
segments in PyTorch's snapshot format -- the weights, gradients and optimizer
state in large fully used segments, the activations in segments left with
free slivers between live blocks (the inactive split), the rest of the cache
as whole free segments -- summarised by the agent's own code
(agent/allocator/segments.py) and checked as the monitor checks an agent's item
(sources/agents/allocator_input.py). Deterministic: a function of the figures.
"""

from __future__ import annotations

from vramscope.agent.allocator.segments import summarize
from vramscope.core.agent_figures.allocator_summary import AllocatorSummary
from vramscope.core.units import GiB, MiB
from vramscope.sources.agents import allocator_input

SNAPSHOT_EVERY = 5.0  # the agent's cadence (agent/allocator/allocator_watch.py)
FULL_SEGMENTS = (2 * GiB, 1 * GiB, 512 * MiB)
SLIVER_SEGMENT = 160 * MiB
MAX_SLIVER_SEGMENTS = 14
FREE_SEGMENTS = (1 * GiB, 512 * MiB, 256 * MiB, 96 * MiB)  # the activations' segments, freed
BASE = 0x7F00_0000_0000


def _segment(address: int, blocks, stream: int = 0) -> dict:
    out, addr = [], address
    for state, size in blocks:
        out.append(
            {
                "address": addr,
                "size": size,
                "requested_size": size if state != "inactive" else 0,
                "state": state,
            }
        )
        addr += size
    return {
        "device": 0,
        "address": address,
        "total_size": addr - address,
        "stream": stream,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "blocks": out,
    }


def segments_for(allocated: int, reserved: int, inactive: int) -> list[dict]:
    """Segments whose totals are the figures given (allocated <= reserved)."""
    gap = max(0, reserved - allocated)
    inactive = max(0, min(inactive, gap))
    segs, addr = [], BASE
    n = max(1, min(MAX_SLIVER_SEGMENTS, inactive // (48 * MiB))) if inactive else 0
    # activations: segments of live blocks with free slivers between them
    sliver_live = min(allocated // 2, n * (SLIVER_SEGMENT // 2)) if n else 0
    remaining = allocated - sliver_live
    for i in range(n):
        free = inactive // n + (inactive % n if i == 0 else 0)
        live = sliver_live // n + (sliver_live % n if i == 0 else 0)
        a, b = free * (3 + i % 4) // 10, free - free * (3 + i % 4) // 10
        l1 = live // 3
        blocks = [("active_allocated", l1), ("inactive", a), ("active_allocated", live - l1), ("inactive", b)]
        segs.append(_segment(addr, [x for x in blocks if x[1] > 0]))
        addr += 4 * GiB
    # weights, gradients, optimizer state: fully used large segments
    i = 0
    while remaining > 0:
        size = min(remaining, FULL_SEGMENTS[i % len(FULL_SEGMENTS)])
        half = size // 2
        segs.append(_segment(addr, [("active_allocated", half), ("active_allocated", size - half)]))
        remaining -= size
        addr += 4 * GiB
        i += 1
    # the rest of the cache: whole free segments (empty_cache() would return them)
    rest = gap - inactive
    i = 0
    while rest > 0:
        size = min(rest, FREE_SEGMENTS[i % len(FREE_SEGMENTS)])
        i += 1
        segs.append(_segment(addr, [("inactive", size)]))
        rest -= size
        addr += 4 * GiB
    return segs


def allocator_item(
    t: float,
    step: int | None,
    device: str,
    allocated: int,
    reserved: int,
    inactive: int,
    expandable: bool = False,
) -> AllocatorSummary:
    """The ALLOCATOR item as the monitor keeps it (an AgentReport's ``allocator``)."""
    summary = summarize(segments_for(allocated, reserved, inactive), device, expandable=expandable)
    summary["device"] = device
    return allocator_input.allocator(
        {"t": t, "step": step, "why": None, "took_ms": 0.4, "devices": [summary]}
    )
