"""Append frames to a session file while the sampler runs.

``SessionWriter`` is a Store listener: ``store.listeners.subscribe(writer)``. It is
called on the sampler thread with each frame and writes it inside an open
transaction that is committed at most ``commit_every`` seconds apart (one
commit per tick at the default 1 s interval). In WAL mode a committed
transaction survives a SIGKILL of this process, so a kill loses at most the
uncommitted last second. Alerts and actions (from the detectors and the
UI, on any thread) go through the same lock and are committed at once.

Nothing here raises once the file exists: a full disk, a vanished
directory or an I/O error rolls the open transaction back, forgets what
that transaction had added (the process and GPU ids it inserted), counts
the frames it lost in ``errors`` and carries on, so that the file stays
exportable and ``frames_written`` counts only frames that are in it. A file
that cannot be created at all raises SessionError with one line and leaves
nothing behind. What a frame's rows are is core/session/sample_rows.py's.
"""

from __future__ import annotations

import logging
import os
import pathlib
import socket
import sqlite3
import threading
import time

from vramscope import __version__
from vramscope.core.samples import Frame
from vramscope.core.session.errors import SessionError
from vramscope.core.session.library import RetentionPolicy, enforce_retention, session_files
from vramscope.core.session.mig_rows import MIG_DDL
from vramscope.core.session.module_rows import MODULE_DDL
from vramscope.core.session.new_file import create_private_file, remove_quietly
from vramscope.core.session.sample_rows import SampleRows
from vramscope.core.session.schema import APPLICATION_ID, DDL, SCHEMA_VERSION, json_column

log = logging.getLogger(__name__)


class SessionWriter:
    def __init__(
        self,
        path: str | os.PathLike,
        *,
        meta: dict | None = None,
        commit_every: float = 1.0,
        retention: RetentionPolicy | None = None,
        retention_directory: pathlib.Path | None = None,
        retention_every: float = 600.0,
        monotonic=time.monotonic,
    ):
        self.path = pathlib.Path(path)
        create_private_file(self.path)
        self._mono = monotonic
        self.commit_every = float(commit_every)
        self._lock = threading.Lock()
        self._db = None
        try:
            self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._db.executescript(DDL + MIG_DDL + MODULE_DDL)
            now = time.time()
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO schema_version VALUES (?, ?, ?)", (SCHEMA_VERSION, __version__, now)
            )
            base = {"host": socket.gethostname(), "created": now, "app_version": __version__}
            base.update(meta or {})
            self._db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, json_column(v)) for k, v in base.items()]
            )
            self._db.execute("COMMIT")
            for companion in session_files(self.path)[1:]:  # SQLite copies the mode; make sure
                if companion.exists():
                    os.chmod(companion, 0o600)
        except (sqlite3.Error, OSError) as exc:
            if self._db is not None:
                self._db.close()
            remove_quietly(self.path)  # no stub: a retry must not find "already exists"
            raise SessionError(f"cannot create session file {self.path}: {exc}") from None
        self._in_tx = False
        self._last_commit = self._mono()
        self._closed = False
        self._rows = SampleRows()
        self.frames_written = 0  # committed: in the file
        self._pending = 0  # written into the open transaction
        self.errors = 0  # frames lost and other failed writes
        self.last_error: str | None = None
        self._retention = retention
        self._retention_dir = retention_directory
        self._retention_every = retention_every
        self._last_retention = self._mono()
        if retention is not None:
            self._enforce_retention()

    # -- the listener -------------------------------------------------------------
    def __call__(self, frame: Frame) -> None:
        self.on_frame(frame)

    def on_frame(self, frame: Frame) -> None:
        """Store listener (sampler thread). Never raises: a full disk must not stop sampling."""
        with self._lock:
            if self._closed:
                return
            try:
                self._begin()
                self._rows.write(self._db, frame)
                self._pending += 1
                if self._mono() - self._last_commit >= self.commit_every:
                    self._commit()
            except Exception as exc:  # noqa: BLE001 - reported, sampling goes on
                self._failed("cannot write a frame", exc, frames=1)
        if self._retention is not None and self._mono() - self._last_retention >= self._retention_every:
            self._enforce_retention()

    # -- alerts and actions (any thread) --------------------------------------------
    def add_alert(
        self,
        t: float,
        kind: str,
        title: str,
        *,
        severity: str = "warning",
        gpu: int | None = None,
        pid: int | None = None,
        start_time: float | None = None,
        detail: dict | None = None,
    ) -> None:
        self._add_event(
            "an alert",
            "INSERT INTO alerts (t, kind, severity, gpu, proc, title, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
            t,
            pid,
            start_time,
            lambda proc: (t, kind, severity, gpu, proc, title, json_column(detail)),
        )

    def add_action(
        self,
        t: float,
        action: str,
        *,
        pid: int | None = None,
        start_time: float | None = None,
        result: str | None = None,
        detail: dict | None = None,
    ) -> None:
        self._add_event(
            "an action",
            "INSERT INTO actions (t, action, proc, pid, start_time, "
            "result, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
            t,
            pid,
            start_time,
            lambda proc: (t, action, proc, pid, start_time, result, json_column(detail)),
        )

    def _add_event(self, what: str, sql: str, t: float, pid, start_time, row) -> None:
        """One row naming a process, committed at once; a failure is counted, not raised."""
        with self._lock:
            if self._closed:
                return
            try:
                self._begin()
                proc = self._rows.procs.id_of(self._db, pid, start_time, None, t) if pid is not None else None
                self._db.execute(sql, row(proc))
                self._commit()
            except Exception as exc:  # noqa: BLE001
                self._failed(f"cannot write {what}", exc)

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                try:
                    self._commit()
                except Exception as exc:  # noqa: BLE001
                    self._failed("cannot commit", exc)

    def close(self) -> None:
        """Final commit (with the open rollup bucket) and a checkpoint into one file.
        Never raises: what could not be written is counted in ``errors``."""
        with self._lock:
            if self._closed:
                return
            try:
                self._begin()
                self._rows.flush(self._db)
                self._commit()
            except Exception as exc:  # noqa: BLE001 - a full disk at the very end
                self._failed("cannot write the last samples", exc)
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:  # the -wal file stays; SQLite reads it next time
                log.warning("session %s: checkpoint failed: %s", self.path, exc)
            try:
                # back to a rollback journal: a closed session is one file, and a reader's
                # read-only connection makes no -wal and -shm beside it (a WAL database's
                # readers need both: https://www.sqlite.org/wal.html#readonly)
                self._db.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.Error as exc:  # a reader still has it open: it stays in WAL mode
                log.info("session %s stays in WAL mode: %s", self.path, exc)
            finally:
                self._closed = True
                try:
                    self._db.close()
                except sqlite3.Error:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- internals (lock held) ------------------------------------------------------
    def _begin(self) -> None:
        if not self._in_tx:
            self._db.execute("BEGIN")
            self._in_tx = True

    def _commit(self) -> None:
        if self._in_tx:
            self._db.execute("COMMIT")
            self._in_tx = False
        self.frames_written += self._pending
        self._pending = 0
        self._last_commit = self._mono()

    def _failed(self, what: str, exc: BaseException, frames: int = 0) -> None:
        """Roll back the open transaction and count what it lost."""
        lost = self._pending + frames
        self.errors += max(1, lost)
        if self.last_error != str(exc):
            log.error("session %s: %s: %s (%d samples lost)", self.path, what, exc, lost)
        self.last_error = str(exc)
        self._pending = 0
        if self._in_tx:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            self._in_tx = False
        self._rows.forget(self._db)

    def _enforce_retention(self) -> None:
        self._last_retention = self._mono()
        try:
            removed = enforce_retention(self._retention, self._retention_dir, keep=self.path)
            for p in removed:
                log.info("session cap: removed old session %s", p)
        except OSError as exc:
            log.warning("session cap: %s", exc)
