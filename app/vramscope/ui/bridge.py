"""Where worker threads meet the Qt main thread.

A worker never touches a widget. It calls ``bridge.post(fn, *args)``; the
bridge emits a signal, and because the bridge lives on the main thread the
connection is queued, so ``fn`` runs there on the next turn of the event loop.
``run_in_thread(work, done)`` runs ``work`` on a short-lived worker thread and
posts ``done(result, error)`` back (cf. Anki's taskman).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

log = logging.getLogger(__name__)


class Bridge(QObject):
    _posted = Signal(object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._posted.connect(self._run, Qt.ConnectionType.QueuedConnection)

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the main thread (safe to call from any thread)."""
        self._posted.emit((fn, args))

    def run_in_thread(self, work: Callable[[], Any],
                      done: Callable[[Any, BaseException | None], None] | None = None,
                      name: str = "vramscope-task") -> threading.Thread:
        """``work()`` on a worker thread; ``done(result, error)`` on the main thread."""
        def target():
            try:
                result, error = work(), None
            except BaseException as exc:  # handed to `done`, never lost
                log.exception("background task %s failed", name)
                result, error = None, exc
            if done is not None:
                self.post(done, result, error)

        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        return thread

    @Slot(object)
    def _run(self, item) -> None:
        fn, args = item
        try:
            fn(*args)
        except Exception:
            log.exception("posted call %r failed", fn)
