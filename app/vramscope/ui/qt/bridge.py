"""Where worker threads meet the Qt main thread.

A worker never touches a widget. It calls ``bridge.post(fn, *args)``; the
bridge emits a signal, and because the bridge lives on the main thread the
connection is queued, so ``fn`` runs there on the next turn of the event loop.
``run_in_thread(work, done)`` runs ``work`` on a short-lived worker thread and
posts ``done(result, error)`` back (cf. Anki's taskman). ``LatestOnly`` keeps
one worker for work that a newer request makes obsolete (a busy machine's
process table): only the newest waiting request runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

log = logging.getLogger(__name__)

# From this many processes in a frame the window draws its timelines in pieces
# (one per event-loop turn) so no single step holds the GUI thread; below it they
# are drawn at once. (The process table is always built on a worker thread.)
BUSY_PROCESSES = 512


class Bridge(QObject):
    _posted = Signal(object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._posted.connect(self._run, Qt.ConnectionType.QueuedConnection)

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the main thread (safe to call from any thread).
        Dropped once the bridge is gone (the window closed while a worker finished)."""
        try:
            self._posted.emit((fn, args))
        except RuntimeError:  # "Signal source has been deleted": nothing is left to update
            log.debug("dropped %r: the bridge is gone", fn)

    def run_in_thread(
        self,
        work: Callable[[], Any],
        done: Callable[[Any, BaseException | None], None] | None = None,
        name: str = "vramscope-task",
    ) -> threading.Thread:
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


class LatestOnly:
    """One worker thread; ``submit(work, done)`` replaces whatever is waiting,
    so a slow ``work`` never queues up frames; ``done(result)`` runs on the main
    thread (through ``bridge``), skipped when ``work`` failed (logged)."""

    def __init__(self, bridge: Bridge, name: str):
        self._bridge = bridge
        self._name = name
        self._cond = threading.Condition()
        self._next: tuple | None = None
        self._thread: threading.Thread | None = None
        self.busy = False

    def submit(self, work: Callable[[], Any], done: Callable[[Any], None]) -> None:
        with self._cond:
            self._next = (work, done)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._next is None:
                    self._cond.wait()
                (work, done), self._next = self._next, None
                self.busy = True
            try:
                self._bridge.post(done, work())
            except Exception:
                log.exception("background task %s failed", self._name)
            finally:
                # let go of what the task held (a frame: 16k processes on a big box)
                # while waiting for the next, not one frame behind the window
                work = done = None
                with self._cond:
                    self.busy = False
                    self._cond.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Until nothing is waiting or running (tests, benches); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._next is None and not self.busy, timeout)
