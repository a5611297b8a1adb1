"""Read a session file: its span, GPUs, processes, frames and columns.

``SessionReader(path)`` opens the file read-only. A file that is not a
session raises ``NotASessionError``; one whose header or schema cannot be
read raises ``SessionCorruptError``. A file that is damaged further in
(truncated by a copy, a bad sector) still opens: every read that hits a
damaged page is narrowed down to the time spans that can be read, the rest
is skipped, and ``problems`` says what was lost (core/session/salvage.py).
``strict=True`` turns any damage into ``SessionCorruptError`` instead. The
GPU and process samples as columns, the module and MIG rows are read by
``samples`` (core/session/recorded_samples.py); the agents' rows, events,
alerts and actions by ``recorded`` (core/session/recorded_events.py).
"""

from __future__ import annotations

import math
import os
import pathlib
import sqlite3
from collections.abc import Iterator

import numpy as np

from vramscope.agent import json_limits
from vramscope.core.samples import (
    Frame,
)
from vramscope.core.session import frame_rebuild
from vramscope.core.session.columns import index
from vramscope.core.session.file_header import file_problem
from vramscope.core.session.errors import (
    NotASessionError,
    SessionVersionError,
    one_line,
)
from vramscope.core.session.recorded_events import RecordedEvents
from vramscope.core.session.recorded_samples import RecordedSamples
from vramscope.core.session.salvage import SalvagingReads
from vramscope.core.session.schema import SCHEMA_VERSION
from vramscope.core.session.records import (
    GPU_SELECT,
    PROCESS_SELECT,
    GpuInfo,
    ProcessRecord,
    gpu_info,
    process_record,
)


class SessionReader:
    def __init__(self, path: str | os.PathLike, *, strict: bool = False):
        self.path = pathlib.Path(path)
        self.strict = strict
        problem = file_problem(self.path)  # raises for what is no session at all
        reads = self.reads = SalvagingReads(self.path, strict=strict, problem=problem)
        tables = reads.tables
        if "schema_version" not in tables or "frames" not in tables:
            raise NotASessionError(
                f"{self.path} is an SQLite database but not a vramscope session "
                "(no schema_version/frames tables)"
            )
        self.tables = tables
        try:
            row = reads.db.execute("SELECT max(version) FROM schema_version").fetchone()
            self.version = int(row[0]) if row and row[0] is not None else SCHEMA_VERSION
        except (sqlite3.DatabaseError, ValueError, TypeError, OverflowError) as exc:
            reads.damage(
                f"the schema version cannot be read ({one_line(exc)}); read as format {SCHEMA_VERSION}"
            )
            self.version = SCHEMA_VERSION
        if self.version > SCHEMA_VERSION:
            raise SessionVersionError(
                f"{self.path} was written in session format {self.version}; this vramscope "
                f"reads up to format {SCHEMA_VERSION} -- update vramscope to open it"
            )
        self.meta = {}
        for key, value in reads.query("SELECT key, value FROM meta", (), "the session header"):
            try:
                self.meta[key] = json_limits.loads(value) if value is not None else None
            except ValueError:
                self.meta[key] = value
        reads.created = self.meta.get("created")
        self.recorded = RecordedEvents(reads)
        self._procs: dict[int, ProcessRecord] | None = None
        self.samples = RecordedSamples(reads, self.processes)
        self._times: np.ndarray | None = None

    @property
    def db(self) -> sqlite3.Connection:
        """The file's read-only connection (core/session/mig_rows.py, module_rows.py read it)."""
        return self.reads.db

    @property
    def problems(self) -> list[str]:
        """What could not be read, one line each."""
        return self.reads.problems

    @property
    def damaged(self) -> bool:
        return bool(self.reads.problems)

    # -- overview -------------------------------------------------------------------
    def frame_times(self) -> np.ndarray:
        if self._times is None:
            rows = self.reads.ranged(
                "SELECT t FROM frames WHERE t >= ? AND t < ? ORDER BY t",
                -math.inf,
                math.inf,
                "the list of sampling passes",
            )
            times = self.reads.times_of(rows, "sampling passes")
            if not len(times):  # frames table lost: fall back to the GPU samples
                rows = self.reads.ranged(
                    "SELECT DISTINCT t FROM gpu_samples WHERE t >= ? AND t < ? ORDER BY t",
                    -math.inf,
                    math.inf,
                    "GPU samples",
                )
                times = self.reads.times_of(rows, "GPU samples")
            self._times = times
        return self._times

    def span(self) -> tuple[float, float] | None:
        times = self.frame_times()
        if not len(times):
            return None
        return float(times[0]), float(times[-1])

    def __len__(self) -> int:
        return len(self.frame_times())

    @property
    def simulated(self) -> bool:
        return bool(self.meta.get("simulated", False))

    def gpus(self) -> list[GpuInfo]:
        """Each GPU's static facts and, for another machine's, its host (as it was live)."""
        select = self.reads.select("gpus", GPU_SELECT, "the GPU list")
        rows = self.reads.valid(
            self.reads.query(f"SELECT {select} FROM gpus ORDER BY gpu", (), "the GPU list"),
            lambda r: index(r[0]),
            "GPU entries",
        )
        return [gpu_info(r, self.meta) for r in rows]

    def processes(self) -> dict[int, ProcessRecord]:
        if self._procs is None:
            select = self.reads.select("processes", PROCESS_SELECT, "the process list")
            rows = self.reads.valid(
                self.reads.query(f"SELECT {select} FROM processes ORDER BY id", (), "the process list"),
                lambda r: index(r[0]) and index(r[1]),
                "process entries",
            )
            self._procs = {r[0]: process_record(r) for r in rows}
        return self._procs

    def time_chunks(self, seconds: float = 600.0) -> Iterator[tuple[float, float]]:
        """Consecutive [t0, t1) spans covering the session's passes; a gap (or a
        damaged time far off) costs one span, not one per ``seconds`` in between."""
        times = self.frame_times()
        if not len(times):
            return
        last = float(times[-1])
        t = float(times[0])
        while True:
            end = t + seconds
            yield t, min(end, last + 1.0)
            i = int(np.searchsorted(times, end, side="left"))
            if i >= len(times) or end > last:
                return
            t = float(times[i])

    # -- frames ---------------------------------------------------------------------
    def latest_frame(self) -> Frame | None:
        span = self.span()
        return None if span is None else self.frame_at(span[1])

    def frame_at(self, t: float) -> Frame | None:
        """The frame sampled at ``t`` or the last one before it, rebuilt."""
        return frame_rebuild.frame_at(self, t)

    def fork(self) -> "SessionReader":
        """Another reader of the same file with its own SQLite connection (one per
        thread); damage it finds is reported in this reader's ``problems``."""
        other = SessionReader(self.path, strict=self.strict)
        other.reads.problems = self.reads.problems
        other._procs = self._procs
        other._times = self._times
        return other

    def close(self) -> None:
        self.reads.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_session(path: str | os.PathLike, *, strict: bool = False) -> SessionReader:
    """Open a session for reading (see SessionReader)."""
    return SessionReader(path, strict=strict)
