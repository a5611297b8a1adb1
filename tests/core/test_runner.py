"""The one loop (core/flow/runner.py): every sink gets every frame after the
diagnostics, exactly ``passes`` frames or ``duration`` seconds, sinks closed
after the last pass finished, and the one signal policy."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from vramscope.core.flow import runner
from vramscope.core.detectors import DiagnosticSettings
from vramscope.core.flow.monitor import Monitor
from vramscope.core.samples import Frame


class Counting:
    """A source whose frames are numbered (time = pass number)."""

    name, simulated = "test", False

    def __init__(self):
        self.passes = 0
        self.closed = False

    def sample(self, now):
        self.passes += 1
        return Frame(time=float(self.passes), source=self.name)

    def close(self):
        self.closed = True


class Sink:
    def __init__(self, monitor=None, slow: float = 0.0):
        self.frames: list[float] = []
        self.alert_versions: list[int] = []
        self.monitor = monitor
        self.slow = slow
        self.closed_after: int | None = None

    def __call__(self, frame):
        time.sleep(self.slow)
        self.frames.append(frame.time)
        if self.monitor is not None:
            self.alert_versions.append(self.monitor.engine.version)

    def close(self):
        self.closed_after = len(self.frames)


def _monitor(source) -> Monitor:
    return Monitor.build(source, interval=0.1, actions=False, diagnostics=DiagnosticSettings())


def test_passes_hands_exactly_that_many_frames_to_every_sink_in_order():
    source = Counting()
    monitor = _monitor(source)
    first, second = Sink(monitor), Sink()
    last = runner.run(monitor, [first, second], threading.Event(), passes=4)
    assert first.frames == second.frames == [1.0, 2.0, 3.0, 4.0]
    assert last.time == 4.0
    # the diagnostics saw each frame before the sinks did
    assert first.alert_versions == [1, 2, 3, 4]
    assert first.closed_after == 4 and second.closed_after == 4 and source.closed


def test_duration_stops_on_time():
    sink = Sink()
    t0 = time.monotonic()
    runner.run(_monitor(Counting()), [sink], threading.Event(), duration=0.55)
    took = time.monotonic() - t0
    assert 0.5 <= took < 3.0
    assert 4 <= len(sink.frames) <= 8  # every 0.1 s, the first at once


def test_stop_lets_the_pass_under_way_finish_then_closes_the_sinks():
    stop = threading.Event()
    sink = Sink(slow=0.4)
    threading.Timer(0.2, stop.set).start()  # during the first pass's sink call
    runner.run(_monitor(Counting()), [sink], stop)
    assert sink.frames[:1] == [1.0]  # that pass was finished, not cut off
    assert sink.closed_after == len(sink.frames)


def test_a_sink_that_raises_does_not_stop_the_others():
    def broken(_frame):
        raise RuntimeError("broken sink")

    good = Sink()
    monitor = _monitor(Counting())
    runner.run(monitor, [broken, good], threading.Event(), passes=3)
    assert good.frames == [1.0, 2.0, 3.0]  # the others still get every frame ...
    assert monitor.store.listeners.listener_failures == 3  # ... and each failure is counted, not lost


@pytest.mark.parametrize(
    "seconds, interval, passes", [(0, 1, 1), (4, 1, 5), (2.5, 0.5, 6), (0.3, 0.1, 4), (0.05, 0.1, 1)]
)
def test_passes_for_a_watch(seconds, interval, passes):
    assert runner.passes_for(seconds, interval) == passes


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_signal_policy_sets_stop_and_restores_the_handlers(signum):
    # a test run under nohup ignores SIGHUP, which StopSignals then rightly leaves alone
    outer = signal.signal(signum, signal.SIG_DFL) if signum == signal.SIGHUP else None
    try:
        before = signal.getsignal(signum)
        stop = threading.Event()
        with runner.StopSignals(stop) as signals:
            os.kill(os.getpid(), signum)
            assert stop.wait(5)
        assert signals.signum == signum and signals.exit_status == 128 + signum
        assert signal.getsignal(signum) is before
    finally:
        if outer is not None:
            signal.signal(signum, outer)


def test_sighup_is_left_alone_under_nohup_and_when_not_asked():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with runner.StopSignals(threading.Event()):
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
    with runner.StopSignals(threading.Event(), hangup=False):
        assert signal.getsignal(signal.SIGHUP) is previous


@pytest.mark.slow
def test_a_running_command_takes_thresholds_saved_while_it_runs(private_user_dirs):
    """`record` and `stream` (sources/assembly.py) follow the settings file: what the
    window's dialog saves applies from the next pass, without a restart."""
    from vramscope.core.settings.user_settings import Settings
    from vramscope.sources.assembly import build_monitor

    monitor = build_monitor(Counting(), enrichers=None, interval=0.1)
    assert monitor.engine.settings == DiagnosticSettings()
    seen = []
    stop = threading.Event()

    def sink(_frame):
        seen.append(monitor.engine.settings.near_oom_free_bytes)
        if len(seen) == 3:
            Settings().update_diagnostics(near_oom_free_bytes=4 << 30)  # the dialog, elsewhere
        if seen[-1] == 4 << 30:
            stop.set()

    runner.run(monitor, [sink], stop, duration=10)
    assert seen[0] == DiagnosticSettings().near_oom_free_bytes and seen[-1] == 4 << 30
