"""Read a snapshot file into columns: the safe unpickling, then the columns, then the
unpickled objects dropped (the columns are what stays in memory).

The garbage collector is off meanwhile: the unpickled objects are millions of
containers and none is garbage, so every full collection would walk them all
for nothing (a collection still runs when the caller's own allocations ask
for one after this returns)."""

from __future__ import annotations

import gc
import os

from vramscope.core.snapshot import building, columns, native, safe_load
from vramscope.core.units import fmt_bytes

# Unpickled, a snapshot takes about 4.3x its file (bench/snapshot_load.py: ~600 bytes of
# dicts, lists and ints an entry against ~160 in the file), the columns a little more
READ_FACTOR = 5
# read natively into columns (core/snapshot/native.py), at most about 2x (bench/snapshot_load.py)
NATIVE_READ_FACTOR = 2


def memory_refusal(path, size: int, available: int | None, factor: int = READ_FACTOR) -> str | None:
    """Why a file of ``size`` bytes is not read with ``available`` bytes of memory free
    (RAM and swap), or None: a refusal in one line beats the kernel's OOM killer."""
    needed = size * factor
    if available is None or needed <= available:
        return None
    return (
        f"{path} is {fmt_bytes(size)}: reading it needs about {fmt_bytes(needed)} of memory and "
        f"{fmt_bytes(available)} is free (RAM and swap); close other programs or read it on a larger machine"
    )


def available_memory() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available + psutil.swap_memory().free)
    except Exception:  # noqa: BLE001 (no figure: the read is attempted)
        return None


def read(path, on_progress=None, cancelled=None) -> columns.Snapshot:
    """``SnapshotError`` (one line) for a file that is not a snapshot; ``OSError`` when
    it cannot be opened; ``safe_load.Cancelled`` when ``cancelled()`` said so. Read by
    the native reader where it is built and takes the file, else by the pure-Python
    one; ``Snapshot.reader`` says which (and why not the native one)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # (opening it says why)
    available = available_memory()
    why_not = native.WHY_NOT
    enabled = gc.isenabled()
    gc.disable()  # millions of new objects and none of them garbage: no collections meanwhile
    try:
        if why_not is None:
            refusal = memory_refusal(path, size, available, NATIVE_READ_FACTOR)
            if refusal:
                raise safe_load.SnapshotError(refusal)
            try:
                return native.read(path, on_progress, cancelled)
            except native.LeftToPython as exc:
                why_not = str(exc)
        refusal = memory_refusal(path, size, available)
        if refusal:
            raise safe_load.SnapshotError(refusal)
        obj = safe_load.load(path, on_progress, cancelled)
        try:
            snap = building.from_object(obj)
        except safe_load.SnapshotError as exc:
            raise safe_load.SnapshotError(f"{path}: {exc}") from None
        finally:
            del obj
        snap.reader = f"{native.PYTHON} ({why_not})"
        return snap
    finally:
        if enabled:
            gc.enable()
