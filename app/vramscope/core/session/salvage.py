"""A session file's read-only connection, and reads that survive damage.

A read that hits a damaged page (a file truncated by a copy, a bad sector)
is narrowed down to what can be read; the rest is skipped and said once in
``problems``. ``strict=True`` turns any damage into ``SessionCorruptError``
instead. SessionReader (core/session/reader.py) reads each table through this.
"""

from __future__ import annotations

import math
import pathlib
import sqlite3
import urllib.parse

import numpy as np

from vramscope.core.session.columns import moment
from vramscope.core.session.errors import SessionCorruptError, one_line
from vramscope.core.session.schema import present


class SalvagingReads:
    """The connection to ``path`` (read-only) and the damage found reading it.

    ``problem``: what file_header.file_problem found wrong with the file
    before it was opened (None: nothing)."""

    def __init__(self, path: pathlib.Path, *, strict: bool, problem: str | None):
        self.path = path
        self.strict = strict
        self.problems: list[str] = []  # may be shared with another reader's (SessionReader.fork)
        self.created: float | None = None  # when the file was created (its header), if known
        self._columns: dict[str, set[str]] = {}  # table -> its columns (SalvagingReads.columns)
        if problem:
            self.damage(problem)
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
        try:
            try:
                self.tables = self._connect(uri, problem)
            except sqlite3.OperationalError:
                # a name SQLite cannot add "-shm"/"-wal" to (255 bytes), a read-only
                # directory: read the file itself, as it is
                self.tables = self._connect(uri + "&immutable=1", problem)
        except (sqlite3.DatabaseError, UnicodeError) as exc:
            raise SessionCorruptError(
                f"{path}: the session file is damaged beyond reading its table list "
                f"({one_line(exc)}); nothing can be recovered from it"
            ) from exc

    def _connect(self, uri: str, problem: str | None) -> set[str]:
        """Open the connection; the names of the file's tables."""
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        # text that is not UTF-8 (a flipped bit) reads as text with U+FFFD, not an error
        self.db.text_factory = lambda b: b.decode("utf-8", "replace")
        if problem:
            # SQLite refuses a file shorter than its header says unless the schema
            # is "writable"; on this read-only connection that only makes it read
            # the pages that exist.
            self.db.execute("PRAGMA writable_schema=ON")
        try:
            return {
                r[0]
                for r in self.db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
            }
        except sqlite3.Error:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    def damage(self, text: str) -> None:
        """``text`` could not be read: said once in ``problems`` (raised when strict)."""
        if self.strict:
            raise SessionCorruptError(f"{self.path}: {text}")
        if text not in self.problems:
            self.problems.append(text)

    def query(self, sql: str, params: tuple, what: str) -> list:
        """The rows ``sql`` gives; none (and ``what`` said in ``problems``) from a damaged page."""
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            self.damage(f"{what} could not be read ({one_line(exc)})")
            return []

    def columns(self, table: str, what: str) -> set[str]:
        """The names of ``table``'s columns (an older file lacks some)."""
        known = self._columns.get(table)
        if known is None:
            known = self._columns[table] = {r[1] for r in self.query(f"PRAGMA table_info({table})", (), what)}
        return known

    def select(self, table: str, names, what: str) -> str:
        """The SELECT list of ``names`` from ``table``: NULL for a column the file
        lacks. A file written before a column was added (a new allocator figure, a
        new process fact) reads with that figure not available -- not as damage."""
        return present(self.columns(table, what), names)

    def ranged(self, sql: str, t0: float, t1: float, what: str) -> list:
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
                        return self.db.execute(sql, (lo, t1)).fetchall()
                    except sqlite3.DatabaseError:
                        if self.strict:
                            raise
                for row in self.db.execute(sql, (lo, t1)):  # row by row: keep what precedes
                    if lost_from is not None:  # a damaged page
                        self.damage(
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
                    created = self.created
                    base = float(created) - 1.0 if isinstance(created, (int, float)) else base
                if not math.isfinite(base):
                    self.damage(f"{what} could not be read ({one_line(exc)})")
                    return out
                lo, skip = base + skip, skip * 2
                if lo >= t1 or skip > 1e8:
                    break
        if lost_from is not None:
            self.damage(
                f"{what} after t={lost_from:.0f} could not be read "
                "(the end of the file is damaged or missing)"
            )
        return out

    def times_of(self, rows: list, what: str) -> np.ndarray:
        """The distinct readable times of ``rows`` (first column t), sorted."""
        good = [r[0] for r in rows if moment(r[0])]
        if len(good) != len(rows):
            self.damage(f"{len(rows) - len(good)} {what} have no readable time; skipped")
        return np.unique(np.asarray(good, dtype=np.float64))

    def valid(self, rows: list, ok, what: str) -> list:
        """The rows ``ok`` accepts; the others are skipped and said once."""
        good = [r for r in rows if len(r) and ok(r)]
        if len(good) != len(rows):
            self.damage(f"{len(rows) - len(good)} {what} were unreadable (wrong types); skipped")
        return good
