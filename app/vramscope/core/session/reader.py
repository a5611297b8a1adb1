"""Read a session file: its span, GPUs, processes, frames and columns.

``SessionReader(path)`` opens the file read-only. A file that is not a
session raises ``NotASessionError``; one whose header or schema cannot be
read raises ``SessionCorruptError``. A file that is damaged further in
(truncated by a copy, a bad sector) still opens: every read that hits a
damaged page is narrowed down to the time spans that can be read, the rest
is skipped, and ``problems`` says what was lost. ``strict=True`` turns any
damage into ``SessionCorruptError`` instead.
"""

from __future__ import annotations

import math
import os
import pathlib
import sqlite3
import urllib.parse
from collections.abc import Iterator

import numpy as np

from vramscope.agent import json_limits
from vramscope.core.samples import (
    Frame,
)
from vramscope.core.session import frame_rebuild, mig_rows, module_rows
from vramscope.core.session.file_header import file_problem
from vramscope.core.session.columns import (
    GpuColumns,
    ProcColumns,
    empty_proc,
    finite,
    gpu_columns,
    index,
    known_processes,
    loads,
    moment,
    proc_columns,
    text_or_none,
)
from vramscope.core.session.errors import (
    NotASessionError,
    SessionCorruptError,
    SessionVersionError,
    one_line,
)
from vramscope.core.session.schema import (
    AGENT_COLUMNS,
    BUCKET_COLUMNS,
    GPU_COLUMNS,
    ROLLUP_GPU_COLUMNS,
    SCHEMA_VERSION,
)
from vramscope.core.session.records import (
    GPU_SELECT,
    PROCESS_SELECT,
    GpuInfo,
    ProcessRecord,
    gpu_info,
    present,
    process_record,
)


class SessionReader:
    def __init__(self, path: str | os.PathLike, *, strict: bool = False):
        self.path = pathlib.Path(path)
        self.strict = strict
        self.problems: list[str] = []
        problem = file_problem(self.path)  # raises for what is no session at all
        if problem:
            self._damage(problem)
        uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?mode=ro"
        try:
            try:
                tables = self._connect(uri, problem)
            except sqlite3.OperationalError:
                # a name SQLite cannot add "-shm"/"-wal" to (255 bytes), a read-only
                # directory: read the file itself, as it is
                tables = self._connect(uri + "&immutable=1", problem)
        except (sqlite3.DatabaseError, UnicodeError) as exc:
            raise SessionCorruptError(
                f"{self.path}: the session file is damaged beyond reading its table list "
                f"({one_line(exc)}); nothing can be recovered from it"
            ) from exc
        if "schema_version" not in tables or "frames" not in tables:
            raise NotASessionError(
                f"{self.path} is an SQLite database but not a vramscope session "
                "(no schema_version/frames tables)"
            )
        self.tables = tables
        try:
            row = self._db.execute("SELECT max(version) FROM schema_version").fetchone()
            self.version = int(row[0]) if row and row[0] is not None else SCHEMA_VERSION
        except (sqlite3.DatabaseError, ValueError, TypeError, OverflowError) as exc:
            self._damage(
                f"the schema version cannot be read ({one_line(exc)}); read as format {SCHEMA_VERSION}"
            )
            self.version = SCHEMA_VERSION
        if self.version > SCHEMA_VERSION:
            raise SessionVersionError(
                f"{self.path} was written in session format {self.version}; this vramscope "
                f"reads up to format {SCHEMA_VERSION} -- update vramscope to open it"
            )
        self.meta = {}
        for key, value in self.query("SELECT key, value FROM meta", (), "the session header"):
            try:
                self.meta[key] = json_limits.loads(value) if value is not None else None
            except ValueError:
                self.meta[key] = value
        self._procs: dict[int, ProcessRecord] | None = None
        self._mig: tuple[dict, dict] | None = None  # (slice statics, process id -> slice)
        self._times: np.ndarray | None = None

    def _connect(self, uri: str, problem: str | None) -> set[str]:
        """Open the connection; the names of the file's tables."""
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        # text that is not UTF-8 (a flipped bit) reads as text with U+FFFD, not an error
        self._db.text_factory = lambda b: b.decode("utf-8", "replace")
        if problem:
            # SQLite refuses a file shorter than its header says unless the schema
            # is "writable"; on this read-only connection that only makes it read
            # the pages that exist.
            self._db.execute("PRAGMA writable_schema=ON")
        try:
            return {
                r[0]
                for r in self._db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
            }
        except sqlite3.Error:
            self._db.close()
            raise

    # -- damage handling ------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        """The file's read-only connection (core/session/mig_rows.py, module_rows.py read it)."""
        return self._db

    @property
    def damaged(self) -> bool:
        return bool(self.problems)

    def _damage(self, text: str) -> None:
        if self.strict:
            raise SessionCorruptError(f"{self.path}: {text}")
        if text not in self.problems:
            self.problems.append(text)

    def query(self, sql: str, params: tuple, what: str) -> list:
        """The rows ``sql`` gives; none (and ``what`` said in ``problems``) from a damaged page."""
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            self._damage(f"{what} could not be read ({one_line(exc)})")
            return []

    def _ranged(self, sql: str, t0: float, t1: float, what: str) -> list:
        """Rows of ``sql`` (first column t; two ? for t >= t0 AND t < t1), in t order.

        Rows are read in batches, so a damaged page loses only what lies on it:
        the rows before it are kept, and the read resumes after it (skipping
        ahead 1 s, 2 s, 4 s, ... until a read succeeds).
        """
        out: list = []
        lo, skip, lost_from = t0, 1.0, None
        while True:
            try:
                if lost_from is None and not out:
                    try:  # the fast path: nothing damaged
                        return self._db.execute(sql, (lo, t1)).fetchall()
                    except sqlite3.DatabaseError:
                        if self.strict:
                            raise
                for row in self._db.execute(sql, (lo, t1)):  # row by row: keep what precedes
                    if lost_from is not None:  # a damaged page
                        self._damage(
                            f"{what} between t={lost_from:.0f} and t={row[0]:.0f} "
                            "could not be read; that span is skipped"
                        )
                        lost_from = None
                    out.append(row)
                break
            except sqlite3.DatabaseError as exc:
                if self.strict:
                    raise SessionCorruptError(
                        f"{self.path}: {what} could not be read ({one_line(exc)})"
                    ) from exc
                last = out[-1][0] if out else None
                if lost_from is None:
                    lost_from = last if last is not None else lo
                base = max(lo, last) if last is not None else lo
                if not math.isfinite(base):  # start from when the file was created
                    created = getattr(self, "meta", {}).get("created")
                    base = float(created) - 1.0 if isinstance(created, (int, float)) else base
                if not math.isfinite(base):
                    self._damage(f"{what} could not be read ({one_line(exc)})")
                    return out
                lo, skip = base + skip, skip * 2
                if lo >= t1 or skip > 1e8:
                    break
        if lost_from is not None:
            self._damage(
                f"{what} after t={lost_from:.0f} could not be read "
                "(the end of the file is damaged or missing)"
            )
        return out

    # -- overview -------------------------------------------------------------------
    def frame_times(self) -> np.ndarray:
        if self._times is None:
            rows = self._ranged(
                "SELECT t FROM frames WHERE t >= ? AND t < ? ORDER BY t",
                -math.inf,
                math.inf,
                "the list of sampling passes",
            )
            times = self._times_of(rows, "sampling passes")
            if not len(times):  # frames table lost: fall back to the GPU samples
                rows = self._ranged(
                    "SELECT DISTINCT t FROM gpu_samples WHERE t >= ? AND t < ? ORDER BY t",
                    -math.inf,
                    math.inf,
                    "GPU samples",
                )
                times = self._times_of(rows, "GPU samples")
            self._times = times
        return self._times

    def _times_of(self, rows: list, what: str) -> np.ndarray:
        good = [r[0] for r in rows if moment(r[0])]
        if len(good) != len(rows):
            self._damage(f"{len(rows) - len(good)} {what} have no readable time; skipped")
        return np.unique(np.asarray(good, dtype=np.float64))

    def _valid(self, rows: list, ok, what: str) -> list:
        """The rows ``ok`` accepts; the others are skipped and said once."""
        good = [r for r in rows if len(r) and ok(r)]
        if len(good) != len(rows):
            self._damage(f"{len(rows) - len(good)} {what} were unreadable (wrong types); skipped")
        return good

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

    def _columns(self, table: str, what: str) -> set[str]:
        return {r[1] for r in self.query(f"PRAGMA table_info({table})", (), what)}

    def gpus(self) -> list[GpuInfo]:
        """Each GPU's static facts and, for another machine's, its host (as it was live)."""
        select = present(self._columns("gpus", "the GPU list"), GPU_SELECT)
        rows = self._valid(
            self.query(f"SELECT {select} FROM gpus ORDER BY gpu", (), "the GPU list"),
            lambda r: index(r[0]),
            "GPU entries",
        )
        return [gpu_info(r, self.meta) for r in rows]

    def processes(self) -> dict[int, ProcessRecord]:
        if self._procs is None:
            select = present(self._columns("processes", "the process list"), PROCESS_SELECT)
            rows = self._valid(
                self.query(f"SELECT {select} FROM processes ORDER BY id", (), "the process list"),
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

    # -- columns --------------------------------------------------------------------
    def gpu_columns(self, t0: float = -math.inf, t1: float = math.inf) -> GpuColumns:
        cols = ", ".join(GPU_COLUMNS)
        rows = self._ranged(
            f"SELECT t, gpu, {cols} FROM gpu_samples WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "GPU samples",
        )
        return gpu_columns(rows, GPU_COLUMNS, self._damage)

    def gpu_rollup(self, t0: float = -math.inf, t1: float = math.inf) -> GpuColumns:
        if "gpu_rollup" not in self.tables:
            return gpu_columns([], ROLLUP_GPU_COLUMNS, self._damage)
        cols = ", ".join(ROLLUP_GPU_COLUMNS)
        rows = self._ranged(
            f"SELECT t, gpu, {cols} FROM gpu_rollup WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "GPU 10 s peaks",
        )
        return gpu_columns(rows, ROLLUP_GPU_COLUMNS, self._damage)

    def proc_columns(self, t0: float = -math.inf, t1: float = math.inf) -> ProcColumns:
        rows = self._ranged(
            "SELECT t, gpu, n, ids, used, sm, flags FROM proc_samples WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "process samples",
        )
        return self._known(proc_columns(rows, True, self._damage))

    def proc_rollup(self, t0: float = -math.inf, t1: float = math.inf) -> ProcColumns:
        if "proc_rollup" not in self.tables:
            return empty_proc(False)
        rows = self._ranged(
            "SELECT t, gpu, n, ids, used FROM proc_rollup WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "process 10 s peaks",
        )
        return self._known(proc_columns(rows, False, self._damage))

    def _known(self, cols: ProcColumns) -> ProcColumns:
        return known_processes(cols, np.fromiter(self.processes(), np.int64), self._damage)

    def agent_rows(self, t0: float = -math.inf, t1: float = math.inf) -> list[dict]:
        cols = ("t", "proc", "device", "gpu_uuid", "step") + AGENT_COLUMNS + BUCKET_COLUMNS
        rows = self._ranged(
            f"SELECT {', '.join(cols)} FROM agent_samples WHERE t >= ? AND t < ? ORDER BY t, proc, device",
            t0,
            t1,
            "agent samples",
        )
        rows = self._valid(
            rows, lambda r: moment(r[0]) and index(r[1]) and isinstance(r[2], str), "agent samples"
        )
        numbers = AGENT_COLUMNS + BUCKET_COLUMNS
        return [
            {
                "t": r[0],
                "proc": r[1],
                "device": r[2],
                "gpu_uuid": text_or_none(r[3]),
                "step": r[4] if index(r[4]) else None,
                **{c: (int(v) if finite(v) else None) for c, v in zip(numbers, r[5:])},
            }
            for r in rows
        ]

    def agent_info(self) -> dict[int, dict]:
        out = {}
        for proc, host, rank, local_rank, world, settings in self.query(
            "SELECT proc, hostname, rank, local_rank, world_size, allocator_settings FROM agent_info",
            (),
            "agent details",
        ):
            settings = loads(settings)
            out[proc] = {
                "hostname": text_or_none(host),
                "rank": rank if index(rank) else None,
                "local_rank": local_rank if index(local_rank) else None,
                "world_size": world if index(world) else None,
                "allocator_settings": settings if isinstance(settings, dict) else {},
            }
        return out

    def events(self, t0: float = -math.inf, t1: float = math.inf) -> list[dict]:
        rows = self._ranged(
            "SELECT t, proc, kind, data FROM events WHERE t >= ? AND t < ? ORDER BY t, id",
            t0,
            t1,
            "agent events",
        )
        rows = self._valid(rows, lambda r: moment(r[0]) and isinstance(r[2], str), "agent events")
        return [{"t": t, "proc": p, "kind": k, "data": _dict(loads(d))} for t, p, k, d in rows]

    def alerts(self) -> list[dict]:
        rows = self._valid(
            self.query(
                "SELECT t, kind, severity, gpu, proc, title, detail FROM alerts ORDER BY t, id", (), "alerts"
            ),
            lambda r: moment(r[0]) and isinstance(r[1], str),
            "alerts",
        )
        return [
            {"t": t, "kind": k, "severity": s, "gpu": g, "proc": p, "title": ti, "detail": _dict(loads(d))}
            for t, k, s, g, p, ti, d in rows
        ]

    def actions(self) -> list[dict]:
        rows = self._valid(
            self.query(
                "SELECT t, action, proc, pid, start_time, result, detail FROM actions ORDER BY t, id",
                (),
                "actions",
            ),
            lambda r: moment(r[0]) and isinstance(r[1], str),
            "actions",
        )
        return [
            {
                "t": t,
                "action": a,
                "proc": p,
                "pid": pid,
                "start_time": st,
                "result": r,
                "detail": _dict(loads(d)),
            }
            for t, a, p, pid, st, r, d in rows
        ]

    def modules(self, t0: float = -math.inf, t1: float = math.inf) -> list:
        """(time, proc id, ModuleFigures) of the per-module rows recorded in [t0, t1)."""
        return module_rows.all_modules(self._db, t0, t1)

    def mig_tables(self) -> tuple[dict, dict]:
        """MIG slice statics and each process's slice, read once (like processes())."""
        if self._mig is None:
            self._mig = (mig_rows.slice_statics(self._db), mig_rows.proc_slices(self._db))
        return self._mig

    def mig_series(self, t0: float, t1: float) -> dict[tuple, tuple]:
        """MIG slices' used/total series (none in files without MIG)."""
        return mig_rows.slice_series(self._db, t0, t1)

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
        other.problems = self.problems
        other._procs = self._procs
        other._times = self._times
        return other

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def open_session(path: str | os.PathLike, *, strict: bool = False) -> SessionReader:
    """Open a session for reading (see SessionReader)."""
    return SessionReader(path, strict=strict)
