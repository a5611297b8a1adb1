"""Read a snapshot file into columns: the safe unpickling, then the columns, then the
unpickled objects dropped (the columns are what stays in memory)."""

from __future__ import annotations

from vramscope.core.snapshot import columns, safe_load


def read(path, on_progress=None, cancelled=None) -> columns.Snapshot:
    """``SnapshotError`` (one line) for a file that is not a snapshot; ``OSError`` when
    it cannot be opened; ``safe_load.Cancelled`` when ``cancelled()`` said so."""
    obj = safe_load.load(path, on_progress, cancelled)
    try:
        return columns.from_object(obj)
    finally:
        del obj
