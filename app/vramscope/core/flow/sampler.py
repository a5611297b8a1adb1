"""The one sampling thread: source -> frozen frame -> store.

Drift-free: tick k is due at ``start + k * interval`` on the monotonic
clock, so a slow pass delays one tick instead of shifting every later one;
ticks missed entirely are skipped, never bunched up. Nothing here touches
Qt; the GUI reads the store from its own timer.

The thread never dies silently: a source, an enricher or a store listener
that raises is counted and logged, and what went wrong rides on the next
frame (``Frame.notices``) so that every view shows it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from vramscope.core.samples import Frame
from vramscope.core.flow.source import Source
from vramscope.core.store.store import Store

log = logging.getLogger(__name__)

MIN_INTERVAL = 0.1
MAX_INTERVAL = 60.0
DEFAULT_INTERVAL = 1.0

Enricher = Callable[[Frame], Frame]


def clamp_interval(seconds: float) -> float:
    return min(MAX_INTERVAL, max(MIN_INTERVAL, float(seconds)))


class SteadyWallClock:
    """The wall clock's time for stamping frames, never going back.

    The store, the recorder and every plot keep a series in time order (a series
    is searched by time), so a wall clock stepped back -- an NTP step soon after
    boot, a date set by hand -- would put new samples before the old ones: the
    plots would lose them and a growth rate would run backwards. From a step
    back on, stamps go on from the last one at the monotonic clock's pace (the
    step's size ahead of the wall clock) until the wall clock passes them again;
    a step forward is followed (the monotonic clock's pace is the wall clock's
    otherwise: both are slewed alike on Linux, clock_gettime(2))."""

    def __init__(
        self, wall: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic
    ):
        self._wall, self._mono = wall, monotonic
        self._last: tuple[float, float] | None = None  # (the last stamp, the monotonic time then)

    def __call__(self) -> float:
        wall, mono = self._wall(), self._mono()
        if self._last is not None:
            stamp, then = self._last
            wall = max(wall, stamp + (mono - then))
        self._last = (wall, mono)
        return wall


class Sampler:
    def __init__(
        self,
        source: Source,
        store: Store,
        interval: float = DEFAULT_INTERVAL,
        enrichers: list[Enricher] | None = None,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        """``wall_clock`` stamps the frames, never going back (SteadyWallClock)."""
        self.source = source
        self.store = store
        self._interval = clamp_interval(interval)
        self.enrichers: list[Enricher] = list(enrichers or [])
        self._wall = SteadyWallClock(wall_clock, monotonic)
        self._mono = monotonic
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes = 0
        self.last_pass_seconds: float | None = None
        self.errors = 0
        self.failure: str | None = None  # why the thread stopped, if it ever does on its own
        self._pending: list[str] = []  # notices for the next frame
        self.last_notices: tuple[str, ...] = ()  # the newest notices a frame carried
        self.notice_count = 0  # notices ever attached to a frame

    @property
    def interval(self) -> float:
        return self._interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self._interval = clamp_interval(seconds)
        self._wake.set()  # re-plan the schedule from now

    def sample_once(self, now: float | None = None) -> Frame:
        """One pass on the calling thread (used by `status` and tests); ``now``: the
        time to sample at (a simulated source fed ahead, e.g. for screenshots). Never raises."""
        t0 = self._mono()
        now = self._wall() if now is None else now
        name = getattr(self.source, "name", "?")
        try:
            frame = self.source.sample(now)
        except Exception as exc:  # a source must not kill the sampler
            self.errors += 1
            log.exception("source %s failed", name)
            frame = Frame(
                time=now,
                source=name,
                simulated=getattr(self.source, "simulated", False),
                error=f"sampling failed: {exc}",
            )
        for enrich in self.enrichers:
            try:
                frame = enrich(frame)
            except Exception as exc:
                self.errors += 1
                log.exception("enricher %r failed", enrich)
                self._pending.append(f"{type(enrich).__name__} failed: {type(exc).__name__}: {exc}")
        notices = self._pending + [f.text() for f in self.store.listeners.take_failures()]
        self._pending = []
        if notices:
            frame = dataclasses.replace(frame, notices=frame.notices + tuple(notices))
            self.last_notices = tuple(notices)
            self.notice_count += len(notices)
        try:
            self.store.append(frame)
        except Exception as exc:  # the store itself: keep sampling, say so next time
            self.errors += 1
            log.exception("storing a frame failed")
            self._pending.append(f"storing a frame failed: {type(exc).__name__}: {exc}")
        self.passes += 1
        self.last_pass_seconds = self._mono() - t0
        return frame

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="vramscope-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - record why, then let it end
            self.failure = f"sampling stopped: {type(exc).__name__}: {exc}"
            log.exception("the sampler thread stopped")
            raise

    def _loop(self) -> None:
        start = self._mono()
        k = 0
        interval = self._interval
        while not self._stop.is_set():
            began = self._mono()
            frame = self.sample_once()
            if getattr(self.source, "paced", False):
                # the source waits for frames on its own grid (the window's sampler
                # process): each is taken as it comes, never held to a second grid
                # that could fall between two of them and drop one (a frame with an
                # error -- the sampler is down -- is made again at the interval)
                rest = began + self._interval / (1 if frame.error else 2) - self._mono()
                if rest > 0 and self._wake.wait(rest):
                    self._wake.clear()
                continue
            k += 1
            due = start + k * interval
            now = self._mono()
            if now > due:  # missed ticks: skip them, stay on the grid
                k += int((now - due) // interval) + 1
                due = start + k * interval
            # Wait for the tick; a wake-up (stop, new interval) ends the wait early,
            # but one that changes nothing must not add an off-grid pass.
            while not self._stop.is_set() and now < due:
                if self._wake.wait(due - now):
                    self._wake.clear()
                    if interval != self._interval:  # interval changed: new grid from now
                        interval = self._interval
                        start, k = self._mono(), 0
                        break
                now = self._mono()
