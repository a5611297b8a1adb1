"""The window's own recording: on by default, but only of real GPUs.

A Store listener that creates the session file on the first frame that has
real (not simulated) GPUs -- a machine without a driver gets no empty
session files -- and never writes simulated frames into it, so switching
the window to the demo does not mix invented data into a real recording.
Alerts and end-process actions go in beside the samples (AlertJournal).
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
    def __init__(self, engine=None, actions=None, meta: dict | None = None,
                 retention: RetentionPolicy | None = None,
                 directory: pathlib.Path | None = None):
        self.engine = engine
        self.meta = dict(meta or {})
        self.retention = retention or RetentionPolicy()
        self.directory = directory
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
        if frame.simulated or self._closed:
            return
        if self.writer is None:
            if not frame.gpus or self.error is not None:
                return
            self._open()
            if self.writer is None:
                return
        self.writer(frame)
        if self.journal is not None:
            self.journal(frame)

    def _open(self) -> None:
        with self._lock:
            if self.writer is not None or self._closed:
                return
            directory = self.directory or default_directory()
            try:
                self.writer = SessionWriter(new_session_path(directory), meta=self.meta,
                                            retention=self.retention,
                                            retention_directory=directory)
            except (SessionError, OSError) as exc:
                self.error = str(exc)
                log.warning("not recording this session: %s", exc)
                return
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
