"""The one loop every front end runs: ``run(monitor, sinks, stop)``. No Qt.

    source -> enrichers -> store -> [labels] -> [diagnostics] -> sinks

`record` (its sinks: the session recorder and a tally), `status` and
`status --watch` (the status printer), `stream` (the stream writer -- which is
also how the window's own sampler process feeds the window) all sample through
``run``: the pipeline's sampler thread on its drift-free grid (core/flow/sampler.py),
each frame handed to every sink after the diagnostics saw it, until ``stop`` is
set, ``duration`` seconds passed or ``passes`` frames were handed out.

One signal policy (``StopSignals``): SIGINT and SIGTERM (and SIGHUP, unless the
command was started under nohup) set ``stop``; the pass under way finishes,
every sink is closed (the recorder's final commit), and the command exits with
the status it gives for the signal -- 0 for `record` and `stream`, which end
that way, 128 + the signal for `status`, as a shell reports it.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence

from vramscope.core.samples import Frame
from vramscope.core.store.store import STAGE_RECORDER

log = logging.getLogger(__name__)

Sink = Callable[[Frame], None]  # optionally with close(): called once sampling has stopped
# seconds between looks while waiting for stop: a thread that sets it wakes the wait at
# once; this bounds how late a signal that landed on another thread is seen (Python runs
# handlers on the main thread). Each wake-up costs ~0.1 ms: four a second were a tenth
# of the window's sampler process at 2 GPUs x 5 processes (bench/gui_vs_nvitop.py).
POLL = 1.0


class _Feed:
    """The runner's one store listener: hands each frame to the sinks, in order, and
    stops handing out after ``passes`` frames (a pass more may have begun by then)."""

    def __init__(self, sinks: Sequence[Sink], stop: threading.Event, passes: int | None):
        self.sinks = list(sinks)
        self.stop = stop
        self.passes = passes
        self.frames = 0
        self.last: Frame | None = None

    def __call__(self, frame: Frame) -> None:
        if self.passes is not None and self.frames >= self.passes:
            return
        self.frames += 1
        self.last = frame
        failure = None
        for sink in self.sinks:  # one that raises does not keep the frame from the others
            try:
                sink(frame)
            except Exception as exc:  # noqa: BLE001 -- raised below, once all had the frame
                failure = failure or exc
        if self.passes is not None and self.frames >= self.passes:
            self.stop.set()
        if failure is not None:
            raise failure  # the store counts it and the next frame says so (core/flow/sampler.py)


def run(
    monitor,
    sinks: Sequence[Sink],
    stop: threading.Event,
    *,
    duration: float | None = None,
    passes: int | None = None,
    before=None,
) -> Frame | None:
    """Sample through ``monitor`` (core/flow/monitor.py) into ``sinks`` until ``stop`` is set,
    ``duration`` seconds have passed or ``passes`` frames were handed out; then stop
    sampling (the current pass finishes), close the monitor and each sink's ``close``.
    Returns the last frame handed to the sinks (None if none was). ``before()``: run
    once the sinks are subscribed, before the sampler starts (the window's demo
    story so far, commands/stream.py)."""
    feed = _Feed(sinks, stop, passes)
    monitor.pipeline.subscribe(feed, STAGE_RECORDER)
    if before is not None:
        before()
    started = time.monotonic()
    monitor.pipeline.start()
    try:
        while not stop.is_set():
            left = None if duration is None else duration - (time.monotonic() - started)
            if left is not None and left <= 0:
                break
            stop.wait(POLL if left is None else min(POLL, left))
    finally:
        monitor.close()  # joins the sampler thread: the pass under way is finished
        monitor.store.listeners.unsubscribe(feed)
        for sink in feed.sinks:
            close = getattr(sink, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # noqa: BLE001 -- the other sinks still get closed
                    log.exception("closing %r failed", sink)
    return feed.last


def passes_for(seconds: float, interval: float) -> int:
    """Passes in ``seconds`` of sampling every ``interval`` s, the first at 0 (at least one)."""
    return int(seconds / interval + 1e-9) + 1


class StopSignals:
    """The signal policy of every command: the signals set ``stop`` (``signum`` says
    which came) and the previous handlers come back on exit. Outside the main thread
    (tests that run a command on a thread) nothing is installed."""

    def __init__(self, stop: threading.Event, hangup: bool = True):
        self.stop = stop
        self.hangup = hangup
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def _on_signal(self, signum, _frame) -> None:
        if self.signum is None:
            self.signum = signum
        self.stop.set()

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        wanted = [signal.SIGINT, signal.SIGTERM]
        if (
            self.hangup
            and hasattr(signal, "SIGHUP")
            and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN
        ):  # not under nohup
            wanted.append(signal.SIGHUP)
        for s in wanted:
            self._previous[s] = signal.signal(s, self._on_signal)
        return self

    def __exit__(self, *_exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()

    @property
    def exit_status(self) -> int | None:
        """128 + the signal that stopped the run, as a shell reports it; None if none did."""
        return None if self.signum is None else 128 + int(self.signum)
