"""Read a snapshot file into columns: the safe unpickling, then the columns, then the
unpickled objects dropped (the columns are what stays in memory).

The garbage collector is off meanwhile: the unpickled objects are millions of
containers and none is garbage, so every full collection would walk them all
for nothing (a collection still runs when the caller's own allocations ask
for one after this returns)."""

from __future__ import annotations

import gc

from vramscope.core.snapshot import columns, safe_load


def read(path, on_progress=None, cancelled=None) -> columns.Snapshot:
    """``SnapshotError`` (one line) for a file that is not a snapshot; ``OSError`` when
    it cannot be opened; ``safe_load.Cancelled`` when ``cancelled()`` said so."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        obj = safe_load.load(path, on_progress, cancelled)
        try:
            return columns.from_object(obj)
        except safe_load.SnapshotError as exc:
            raise safe_load.SnapshotError(f"{path}: {exc}") from None
        finally:
            del obj
    finally:
        if enabled:
            gc.enable()
