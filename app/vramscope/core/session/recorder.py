"""A recording as one stage of the pipeline (core/flow/monitor.py): samples, alerts
and end-process actions into one session file.

The window's recording (on by default) creates the file on the first frame
that has real (not simulated) GPUs -- a machine without a driver gets no
empty session files -- and never writes simulated frames into it, so
switching the window to the demo does not mix invented data into a real
recording. `vramscope record` names its file up front (``path``, created by
``open()`` so that a refusal is said before sampling starts) and writes
whatever its source gives, the demo included.

It runs after the diagnostics stage, so the alerts it journals are those of
the frame it just wrote.
"""

from __future__ import annotations

import logging
import pathlib
import threading

from vramscope.core.samples import Frame
from vramscope.core.session.errors import SessionError
from vramscope.core.session.journal import AlertJournal
from vramscope.core.session.library import RetentionPolicy, default_directory, new_session_path
from vramscope.core.session.writer import SessionWriter

log = logging.getLogger(__name__)


class SessionRecorder:
    def __init__(
        self,
        engine=None,
        actions=None,
        meta: dict | None = None,
        retention: RetentionPolicy | None = None,
        directory: pathlib.Path | None = None,
        path: pathlib.Path | None = None,
        include_simulated: bool = False,
    ):
        self.engine = engine
        self.meta = dict(meta or {})
        self.retention = retention or RetentionPolicy()
        self.directory = directory
        self.fixed_path = pathlib.Path(path) if path is not None else None
        self.include_simulated = include_simulated
        self.writer: SessionWriter | None = None
        self.journal: AlertJournal | None = None
        self.error: str | None = None
        self._lock = threading.Lock()
        self._closed = False
        if actions is not None:
            actions.observers.append(self._on_action)

    @property
    def path(self) -> pathlib.Path | None:
        return self.writer.path if self.writer is not None else None

    def __call__(self, frame: Frame) -> None:
        if (frame.simulated and not self.include_simulated) or self._closed:
            return
        if self.writer is None:
            if not frame.gpus or self.error is not None:
                return
            try:
                self.open()
            except SessionError:
                return
        self.writer(frame)
        if self.journal is not None:
            self.journal(frame)

    def open(self) -> None:
        """Create the session file now; raises SessionError (also kept in ``error``)."""
        with self._lock:
            if self.writer is not None or self._closed:
                return
            if self.fixed_path is not None:
                path, directory, retention = self.fixed_path, self.directory, None
                if directory is not None:
                    retention = self.retention
            else:
                directory = self.directory or default_directory()
                path, retention = new_session_path(directory), self.retention
            try:
                self.writer = SessionWriter(
                    path, meta=self.meta, retention=retention, retention_directory=directory
                )
            except (SessionError, OSError) as exc:
                self.error = str(exc)
                log.warning("not recording this session: %s", exc)
                if isinstance(exc, SessionError):
                    raise
                raise SessionError(str(exc)) from exc
            if self.engine is not None:
                self.journal = AlertJournal(self.engine, self.writer)

    def _on_action(self, entry: dict) -> None:
        if self.journal is not None:
            self.journal.on_action(entry)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self.writer is not None:
                self.writer.close()
