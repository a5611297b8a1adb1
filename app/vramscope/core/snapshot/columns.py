"""A snapshot as columns: per device the trace as numpy arrays, frames and stacks interned.

A trace entry (``TraceEntry`` in ``torch.cuda.memory._snapshot``'s docs)
becomes one row: time (``time_us``; the entry's number where an older
PyTorch wrote none), action code, address, size, stream and the id of its
stack. Frames (``Frame``: filename, line, name) are interned once; a stack
is a tuple of frame ids, innermost first as PyTorch writes them, interned
once (core/snapshot/stacks.py). ``building`` makes these from the unpickled
snapshot.

Fields this version does not know -- a newer PyTorch's -- are kept, never
fatal: top-level keys in ``extra``, an entry's other fields (an OOM's
``device_free``, a ``pool_id`` other than the default, a non-empty
``compile_context`` or ``user_metadata``, anything new) sparsely by row in
``DeviceTrace.other``, a frame's other fields (the FX ones) in
``Stacks.frame_extra``, an unknown action under its own code.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vramscope.core.snapshot.stacks import Stacks

ALLOC, FREE_REQUESTED, FREE_COMPLETED = "alloc", "free_requested", "free_completed"
SEGMENT_ALLOC, SEGMENT_FREE = "segment_alloc", "segment_free"
SEGMENT_MAP, SEGMENT_UNMAP = "segment_map", "segment_unmap"
OOM, SNAPSHOT = "oom", "snapshot"
ACTIONS = (
    ALLOC,
    FREE_REQUESTED,
    FREE_COMPLETED,
    SEGMENT_ALLOC,
    SEGMENT_FREE,
    SEGMENT_MAP,
    SEGMENT_UNMAP,
    SNAPSHOT,
    OOM,
)
COLUMN_FIELDS = frozenset(("action", "addr", "size", "stream", "time_us", "frames"))
DEFAULT_POOL = (0, 0)
KNOWN_TOP = frozenset(("segments", "device_traces", "allocator_settings", "external_annotations"))


@dataclasses.dataclass
class DeviceTrace:
    """One device's trace, a row per entry."""

    time_us: np.ndarray  # int64
    action: np.ndarray  # int16: index into Snapshot.actions
    addr: np.ndarray  # int64
    size: np.ndarray  # int64
    stream: np.ndarray  # int64
    stack: np.ndarray  # int32
    other: dict[int, dict]  # row -> the entry's other fields
    timestamps: bool  # False: an older PyTorch wrote no time_us; times are entry numbers

    def __len__(self) -> int:
        return len(self.time_us)


@dataclasses.dataclass
class Snapshot:
    segments: list[dict]  # the Segment dicts; each block's frames replaced by its "stack" id
    traces: list[DeviceTrace]  # by device index
    stacks: Stacks
    actions: list[str]  # action code -> name (PyTorch's, then unknown ones as met)
    extra: dict  # top-level keys other than segments and device_traces
    unknown_fields: list[str]  # names of fields this version does not know, for the reader
    # which reader read it: "native" (core/snapshot/native.py), else "pure-Python reader (why)"
    reader: str = "pure-Python reader"

    def devices(self) -> list[int]:
        used = {i for i, t in enumerate(self.traces) if len(t)}
        for seg in self.segments:
            dev = seg.get("device")
            if isinstance(dev, int):
                used.add(dev)
        return sorted(used)

    def trace(self, device: int) -> DeviceTrace:
        return self.traces[device] if 0 <= device < len(self.traces) else empty_trace()

    def device_segments(self, device: int) -> list[dict]:
        return [s for s in self.segments if s.get("device", 0) == device]


def empty_trace() -> DeviceTrace:
    z = np.zeros(0, dtype=np.int64)
    return DeviceTrace(z, z.astype(np.int16), z, z, z, z.astype(np.int32), {}, True)
