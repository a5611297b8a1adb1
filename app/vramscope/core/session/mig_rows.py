"""MIG slices in a session file: their own tables, so files without MIG (and
files written before MIG was recorded) are unchanged and still open.

- ``mig_slices``   static facts per slice UUID (GPU, profile, name, instance ids).
- ``mig_samples``  one row per pass and slice: total, used, free (bytes; NULL = n/a).
- ``mig_procs``    which slice a process identity (``processes.id``) ran on.
"""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np

from vramscope.core.samples import GpuProcess, GpuSample, MigSlice

MIG_DDL = """
CREATE TABLE IF NOT EXISTS mig_slices (uuid TEXT PRIMARY KEY, gpu INTEGER NOT NULL,
    slice_index INTEGER, profile TEXT, name TEXT, gpu_instance_id INTEGER,
    compute_instance_id INTEGER);
CREATE TABLE IF NOT EXISTS mig_samples (t REAL NOT NULL, uuid TEXT NOT NULL, total INTEGER,
    used INTEGER, free INTEGER, PRIMARY KEY (t, uuid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mig_procs (proc INTEGER PRIMARY KEY, uuid TEXT NOT NULL);
"""


class MigRows:
    """Writes the slices of each pass (inside the writer's transaction)."""

    def __init__(self):
        self._static: dict[str, tuple] = {}
        self._proc_slice: dict[int, str] = {}

    def write(self, db: sqlite3.Connection, t: float, gpu: GpuSample, proc_ids: dict) -> None:
        """``proc_ids``: {pid: processes.id} for this GPU's processes in this pass."""
        if not gpu.slices:
            return
        rows = []
        for mig in gpu.slices:
            if mig.uuid is None:
                continue
            static = (
                gpu.index,
                mig.index,
                mig.profile,
                mig.name,
                mig.gpu_instance_id,
                mig.compute_instance_id,
            )
            if self._static.get(mig.uuid) != static:
                db.execute(
                    "INSERT OR REPLACE INTO mig_slices VALUES (?, ?, ?, ?, ?, ?, ?)", (mig.uuid, *static)
                )
                self._static[mig.uuid] = static
            rows.append((t, mig.uuid, mig.total, mig.used, mig.free))
        db.executemany("INSERT OR REPLACE INTO mig_samples VALUES (?, ?, ?, ?, ?)", rows)
        for proc in gpu.processes:
            pid_id = proc_ids.get(proc.pid)
            if proc.mig_uuid is None or pid_id is None:
                continue
            if self._proc_slice.get(pid_id) != proc.mig_uuid:
                db.execute("INSERT OR REPLACE INTO mig_procs VALUES (?, ?)", (pid_id, proc.mig_uuid))
                self._proc_slice[pid_id] = proc.mig_uuid

    def forget(self) -> None:
        """After a rollback: what was cached may not be in the file."""
        self._static.clear()
        self._proc_slice.clear()


def _query(db: sqlite3.Connection, sql: str, params: tuple = ()) -> list:
    """Rows, or none for a file without the MIG tables (written before them)."""
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.DatabaseError:
        return []


def proc_slices(db: sqlite3.Connection) -> dict[int, str]:
    """processes.id -> the MIG slice UUID it ran on."""
    return dict(_query(db, "SELECT proc, uuid FROM mig_procs"))


def slice_statics(db: sqlite3.Connection) -> dict[str, tuple]:
    """uuid -> (gpu, slice index, profile, name, GI id, CI id)."""
    return {
        row[0]: row[1:]
        for row in _query(
            db,
            "SELECT uuid, gpu, slice_index, profile, name, gpu_instance_id, compute_instance_id "
            "FROM mig_slices",
        )
    }


def slices_at(
    db: sqlite3.Connection, t0: float, t1: float, gpus: dict[int, GpuSample], statics: dict[str, tuple]
) -> dict[int, tuple[MigSlice, ...]]:
    """The slices recorded in one pass (t0 <= t < t1), per GPU index, with the
    processes of ``gpus`` (already tagged with ``mig_uuid``) that ran on each;
    ``statics`` from slice_statics."""
    out: dict[int, list[MigSlice]] = {}
    for uuid, total, used, free in _query(
        db, "SELECT uuid, total, used, free FROM mig_samples WHERE t >= ? AND t < ?", (t0, t1)
    ):
        st = statics.get(uuid)
        if st is None:
            continue
        gpu_index, index, profile, name, gi, ci = st
        gpu = gpus.get(gpu_index)
        procs = tuple(p for p in gpu.processes if p.mig_uuid == uuid) if gpu else ()
        out.setdefault(gpu_index, []).append(
            MigSlice(
                index=index,
                uuid=uuid,
                name=name,
                profile=profile,
                gpu_instance_id=gi,
                compute_instance_id=ci,
                total=total,
                used=used,
                free=free,
                processes=procs,
            )
        )
    return {
        g: tuple(sorted(s, key=lambda m: (m.gpu_instance_id or 0, m.compute_instance_id or 0)))
        for g, s in out.items()
    }


def tag(proc: GpuProcess, slices: dict[int, str], pid_id: int) -> GpuProcess:
    """The process with the slice it ran on (``slices`` from proc_slices)."""
    uuid = slices.get(pid_id)
    return proc if uuid is None else dataclasses.replace(proc, mig_uuid=uuid)


def slice_series(db: sqlite3.Connection, t0: float, t1: float) -> dict[tuple, tuple]:
    """{(gpu index, slice uuid, metric): (t, values)} for the store (reopened sessions)."""
    gpu_of = dict(_query(db, "SELECT uuid, gpu FROM mig_slices"))
    rows = _query(
        db, "SELECT t, uuid, total, used FROM mig_samples WHERE t >= ? AND t < ? ORDER BY t", (t0, t1)
    )
    grouped: dict[str, list] = {}
    for t, uuid, total, used in rows:
        grouped.setdefault(uuid, []).append((t, total, used))
    out = {}
    for uuid, items in grouped.items():
        gpu = gpu_of.get(uuid)
        if gpu is None:
            continue
        arr = np.array(
            [
                (t, np.nan if total is None else total, np.nan if used is None else used)
                for t, total, used in items
            ],
            dtype=float,
        )
        out[(gpu, uuid, "total")] = (arr[:, 0], arr[:, 1])
        out[(gpu, uuid, "used")] = (arr[:, 0], arr[:, 2])
    return out
