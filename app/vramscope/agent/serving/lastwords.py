"""The run's last words: the final dump, written once, by the process that started the agent.

- At interpreter exit (``atexit``) -- but only in the process that started the
  agent: a forked child (``os.fork`` exiting normally, a DataLoader fork
  worker) inherits the exit handler and must neither write a dump with the
  parent's history nor remove the parent's socket.
- On SIGTERM (what a job scheduler sends before SIGKILL), and on SIGINT and
  SIGHUP where they are left at the default action (nobody handles them:
  Python's own SIGINT handler raises KeyboardInterrupt, whose normal exit
  runs ``atexit``): the dump is written and the socket removed on the main
  thread between two statements, then the previous disposition is restored
  and the signal raised again, so the process ends as it would have (same
  exit status). A handler the script installs later replaces ours.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading

DUMP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, n))


class LastWords:
    def __init__(self, write):
        self._write = write  # () -> None: the final sample, the dump, the socket closed
        self._pid = os.getpid()
        self._signals: dict[int, object] = {}  # signal -> the disposition ours replaced

    def arm(self) -> None:
        """At start (the starting process): at exit, and on the signals above."""
        self._pid = os.getpid()
        atexit.register(self.at_exit)
        if threading.current_thread() is not threading.main_thread():
            return  # (signal handlers can only be set from the main thread)
        for sig in DUMP_SIGNALS:
            try:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    self._signals[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):
                pass

    def disarm(self) -> None:
        atexit.unregister(self.at_exit)
        signals, self._signals = self._signals, {}
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, before in signals.items():
            try:
                if signal.getsignal(sig) == self._on_signal:
                    signal.signal(sig, before)
            except (ValueError, OSError):
                pass

    def at_exit(self) -> None:
        if os.getpid() == self._pid:  # never in a fork child
            self._write()

    def _on_signal(self, signum, frame) -> None:
        before = self._signals.get(signum, signal.SIG_DFL)
        self.disarm()
        self.at_exit()
        signal.signal(signum, before)
        os.kill(os.getpid(), signum)
