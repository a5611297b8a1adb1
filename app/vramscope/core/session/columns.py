"""Rows of a session file -> typed columns, trusting nothing in them.

SQLite stores whatever it is given in any column, and a damaged or edited
file can hold text where a number belongs, NaN, a blob of the wrong length,
an id of a process that is not in the file. Every row is checked here: a
value that cannot be a number becomes "not available" (None / NaN / -1, as
for a value the driver did not give), a row that cannot be placed at all
(no finite time, no GPU index, arrays of inconsistent lengths) is skipped,
and each kind of damage is reported once through ``damage(text)`` -- the
reader's ``problems`` -- so the rest of the file still opens.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from vramscope.agent import json_limits

Damage = Callable[[str], None]

_INT_COLUMNS = {"used", "total", "free", "reserved", "util_gpu", "util_memory", "temperature"}
MAX_PROCESSES_PER_ROW = 1 << 20
LAST_TIME = float(1 << 32)  # seconds since the epoch: 2106; a later "time" is a flipped bit
MAX_VALUE = float(1 << 62)  # bytes, watts, percent: anything larger is damage


@dataclasses.dataclass
class GpuColumns:
    """GPU samples as columns (NaN = not available)."""

    t: np.ndarray
    gpu: np.ndarray
    values: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.t)


@dataclasses.dataclass
class ProcColumns:
    """Process samples as columns, one entry per (pass, GPU, process)."""

    t: np.ndarray  # float64
    gpu: np.ndarray  # int32
    proc: np.ndarray  # int32, processes.id
    used: np.ndarray  # int64, -1 = not available
    sm: np.ndarray | None = None  # int16, -1 = not available
    flags: np.ndarray | None = None  # uint8

    def __len__(self) -> int:
        return len(self.t)

    def only(self, keep: np.ndarray) -> ProcColumns:
        return ProcColumns(
            self.t[keep],
            self.gpu[keep],
            self.proc[keep],
            self.used[keep],
            None if self.sm is None else self.sm[keep],
            None if self.flags is None else self.flags[keep],
        )


def empty_proc(with_sm: bool = True) -> ProcColumns:
    return ProcColumns(
        np.empty(0),
        np.empty(0, np.int32),
        np.empty(0, np.int32),
        np.empty(0, np.int64),
        np.empty(0, np.int16) if with_sm else None,
        np.empty(0, np.uint8) if with_sm else None,
    )


def finite(value) -> bool:
    """A real number of a plausible size (not a bool, not text, not NaN or an infinity)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and -MAX_VALUE < value < MAX_VALUE
    )


def moment(value) -> bool:
    """A time a session can hold: a number of seconds between 1970 and 2106."""
    return finite(value) and 0.0 <= value < LAST_TIME


def index(value) -> bool:
    """A small non-negative integer (a GPU index, a row id)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 31


def number_or_none(value):
    return value if finite(value) else None


def text_or_none(value):
    return value if isinstance(value, str) else None


def opt(value, column: str):
    """A column value as the sample field wants it; None for anything not a number."""
    if not finite(value):
        return None
    return int(value) if column in _INT_COLUMNS else float(value)


def loads(text):
    if text is None:
        return None
    if not isinstance(text, str):
        return {"raw": repr(text)}
    try:
        return json_limits.loads(text)  # nesting bounded: a crafted file is damage, not a traceback
    except ValueError:
        return {"raw": text}


def gpu_columns(rows: list, names: tuple, damage: Damage) -> GpuColumns:
    t, gpu, values = [], [], {c: [] for c in names}
    skipped = unreadable = 0
    seen: set[tuple] = set()
    for r in sorted(rows, key=_time_gpu):  # in order even where an index page is damaged
        if len(r) != len(names) + 2 or not moment(r[0]) or not index(r[1]) or (r[0], r[1]) in seen:
            skipped += 1
            continue
        seen.add((r[0], r[1]))
        t.append(float(r[0]))
        gpu.append(r[1])
        for c, v in zip(names, r[2:]):
            if v is not None and not finite(v):
                unreadable += 1
                v = None
            values[c].append(math.nan if v is None else float(v))
    if skipped:
        damage(
            f"{skipped} GPU samples without a readable (or with a repeated) time and GPU index were skipped"
        )
    if unreadable:
        damage(f"{unreadable} GPU values were not numbers (text, NaN); shown as n/a")
    return GpuColumns(
        np.asarray(t, np.float64),
        np.asarray(gpu, np.int32),
        {c: np.asarray(v, np.float64) for c, v in values.items()},
    )


def _time_gpu(row) -> tuple:
    """A sort key for any row: unreadable ones first (they are skipped anyway)."""
    t, g = (row[0], row[1]) if len(row) >= 2 else (None, None)
    return (moment(t), t if moment(t) else 0.0, g if index(g) else -1)


def _blob(value, n: int, itemsize: int) -> bool:
    return isinstance(value, bytes) and len(value) == n * itemsize


def proc_columns(rows: list, with_sm: bool, damage: Damage) -> ProcColumns:
    """Rows (t, gpu, n, ids, used[, sm, flags]) -> one entry per process sample."""
    good = []
    for r in sorted(rows, key=_time_gpu):
        n = r[2] if len(r) >= 5 else None
        if (
            not moment(r[0])
            or not index(r[1])
            or not index(n)
            or n > MAX_PROCESSES_PER_ROW
            or not _blob(r[3], n, 4)
            or not _blob(r[4], n, 8)
            or (with_sm and (len(r) < 7 or not _blob(r[5], n, 2) or not _blob(r[6], n, 1)))
        ):
            continue
        good.append(r)
    if len(good) != len(rows):
        damage(
            f"{len(rows) - len(good)} process sample rows were unreadable (bad times or "
            "arrays of the wrong size) and were skipped"
        )
    if not good:
        return empty_proc(with_sm)
    t = np.fromiter((r[0] for r in good), np.float64, len(good))
    gpu = np.fromiter((r[1] for r in good), np.int32, len(good))
    n = np.fromiter((r[2] for r in good), np.int64, len(good))
    ids = np.frombuffer(b"".join(r[3] for r in good), dtype="<i4")
    used = np.frombuffer(b"".join(r[4] for r in good), dtype="<i8")
    out = ProcColumns(np.repeat(t, n), np.repeat(gpu, n), ids, used)  # read-only views
    if with_sm:
        out.sm = np.frombuffer(b"".join(r[5] for r in good), dtype="<i2")
        out.flags = np.frombuffer(b"".join(r[6] for r in good), dtype=np.uint8)
    return out


def known_processes(cols: ProcColumns, known: np.ndarray, damage: Damage) -> ProcColumns:
    """Only the samples of processes the file lists (a flipped id names nobody)."""
    keep = np.isin(cols.proc, known)
    if keep.all():
        return cols
    damage(f"{int((~keep).sum())} process samples name a process the file does not list; skipped")
    return cols.only(keep)
