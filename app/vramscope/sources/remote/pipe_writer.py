"""Writing to a child process's stdin without ever waiting on it.

The window's sampler process and an ssh host read their requests (new
thresholds, a new interval, a process action) from their stdin. A child that
stops reading it -- stuck, stopped with SIGSTOP, or a program that never
reads -- fills the pipe (64 KiB on Linux: pipe(7)), and a blocking write then
waits for ever; from the settings dialog that is the GUI thread.

So the pipe is made non-blocking (``os.set_blocking``) and what it does not
take at once waits in a bounded buffer, written later by the connection's
thread when ``select`` says the pipe has room. ``stalled_for`` says how long
bytes have waited: the connection ends a child that stops reading (and starts
it again, said in the window's banner). No write and no ``close`` ever blocks,
and the file is closed under the same lock as the writes, so a write never
reaches a descriptor number reused by something else.
"""

from __future__ import annotations

import os
import threading
import time

MAX_WAITING = 1 << 20  # bytes a child that does not read may leave waiting before sends are refused


class PipeWriter:
    """One child's stdin (a binary file object of ``subprocess.Popen``), written without blocking."""

    def __init__(self, stdin, limit: int = MAX_WAITING, clock=time.monotonic):
        self._file = stdin
        self._fd = stdin.fileno()
        os.set_blocking(self._fd, False)
        self.limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting = bytearray()
        self._since: float | None = None  # when the bytes now waiting started to wait
        self._closed = False
        self.broken = False  # the child closed its end (or the pipe failed)

    def fileno(self) -> int:
        """The pipe's descriptor (for ``select``); -1 once closed, never a number reused since."""
        return -1 if self._closed else self._fd

    def send(self, data: bytes) -> bool:
        """Write ``data`` now, or as soon as the pipe has room (``flush``); False when it
        cannot go: the pipe is closed or broken, or too much already waits unread."""
        with self._lock:
            if self._closed or self.broken or len(self._waiting) + len(data) > self.limit:
                return False
            self._waiting += data
            self._write()
            return not self.broken

    def flush(self) -> None:
        """Write what waits, as far as the pipe takes it (the connection's thread, when
        ``select`` says it is writable)."""
        with self._lock:
            if not self._closed:
                self._write()

    @property
    def waiting(self) -> int:
        """Bytes not yet taken by the pipe."""
        return len(self._waiting)

    def stalled_for(self) -> float:
        """Seconds the bytes now waiting have waited (0 when none waits)."""
        since = self._since
        return 0.0 if since is None else self._clock() - since

    def close(self) -> None:
        """Close the pipe (the child reads EOF); what still waits is dropped."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._waiting.clear()
            self._since = None
            try:
                self._file.close()  # (its buffer is empty: every byte went through os.write)
            except OSError:
                pass

    def _write(self) -> None:
        while self._waiting:
            try:
                n = os.write(self._fd, self._waiting)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # EPIPE: the child closed its end or ended
                self.broken = True
                self._waiting.clear()
                break
            del self._waiting[:n]
        if not self._waiting:
            self._since = None
        elif self._since is None:
            self._since = self._clock()
