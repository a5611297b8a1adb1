"""The shape of an agent's allocator summary as the monitor holds it
(``AgentReport.allocator``): made from the agent's ALLOCATOR item by
sources/agents/allocator_input.py, carried by the stream and sessions, read by the
agents tab's segment map, ``status`` and the fragmentation rule.

The agent's figure names (agent/allocator/segments.py FIGURES) are the keys of a
device's summary; a figure not available is None. The stream codec checks a
summary against these declarations, so a remote host's or an old session's
summary is the same typed value as a local one.
"""

from __future__ import annotations

from typing import TypedDict


class PrivatePools(TypedDict):
    """Memory in private pools (CUDA graphs, ``torch.cuda.MemPool``)."""

    reserved: int | None
    allocated: int | None
    segments: int | None


class SegmentBar(TypedDict):
    """One segment of the map: its size and its runs of blocks, (state, bytes) in
    address order (state: agent/allocator/segments.py STATES)."""

    size: int
    largest_free: int | None
    pool: tuple[int | None, ...] | None  # the private pool's id; None: the default pool
    type: str | None  # "large", "small"
    runs: tuple[tuple[str, int], ...]


class _DeviceFigures(TypedDict):
    device: str
    segments: int | None
    reserved: int | None
    allocated: int | None
    awaiting_free: int | None
    free_split: int | None
    free_segments: int | None
    largest_free_block: int | None
    largest_request: int | None
    expandable_recovers: int | None
    map_left_out: int | None
    map_left_out_bytes: int | None


class DeviceSummary(_DeviceFigures):
    """One device: the figures of agent/allocator/segments.py FIGURES, its pools and its map."""

    private_pools: PrivatePools | None
    map: tuple[SegmentBar, ...]


class AllocatorSummary(TypedDict):
    """The newest summary: when, at which step, why it was taken and its devices by name."""

    t: float
    step: int | None
    why: str | None
    took_ms: float | None
    devices: dict[str, DeviceSummary]
