"""Work off the sampling thread that can never hold up the program's exit.

``concurrent.futures.ThreadPoolExecutor`` joins its threads at interpreter
exit (https://docs.python.org/3/library/concurrent.futures.html#threadpoolexecutor),
so one HTTP read of a slow local port kept `record --duration` and
`status --watch` alive after they said they had finished. ``DaemonWorker``
has the same ``submit`` / ``shutdown`` but runs on one daemon thread: at exit
whatever it is doing is dropped (it only ever reads).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future


class DaemonWorker:
    def __init__(self, name: str):
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker is shut down")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put((future, fn, args))
        return future

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to whoever looks at the future
                future.set_exception(exc)

    def shutdown(self, wait: bool = False, timeout: float = 1.0) -> None:
        """Stop after the current item (queued ones are cancelled); with ``wait``,
        join for at most ``timeout`` seconds."""
        with self._lock:
            self._closed = True
            thread = self._thread
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        self._queue.put(None)
        if wait and thread is not None:
            thread.join(timeout)
