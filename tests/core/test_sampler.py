"""The sampling thread: on a fixed grid, never killed by a failing source."""

from __future__ import annotations

import threading
import time

import pytest

from vramscope.core.flow.sampler import MAX_INTERVAL, MIN_INTERVAL, Sampler, SteadyWallClock, clamp_interval
from vramscope.core.samples import Frame, GpuSample
from vramscope.core.store.store import Store, gpu_key


class TimedSource:
    """Records when each pass happened (monotonic) and takes `work` seconds."""

    name = "timed"
    simulated = True

    def __init__(self, work=0.0, slow_pass=None, slow_work=0.0, fail_every=0):
        self.work, self.slow_pass, self.slow_work = work, slow_pass, slow_work
        self.fail_every = fail_every
        self.ticks: list[float] = []
        self.nows: list[float] = []
        self.done = threading.Event()

    def sample(self, now):
        self.ticks.append(time.monotonic())
        self.nows.append(now)
        n = len(self.ticks)
        time.sleep(self.slow_work if n == self.slow_pass else self.work)
        if self.fail_every and n % self.fail_every == 0:
            raise RuntimeError("NVML_ERROR_UNKNOWN")
        return Frame(time=now, source=self.name, gpus=(GpuSample(index=0, used=n),))

    def close(self):
        pass


def _run_for(sampler, seconds):
    sampler.start()
    try:
        time.sleep(seconds)
    finally:
        sampler.stop()
    assert not sampler.running


def _grid_errors(ticks, interval):
    """Distance of each tick from the grid that starts at the first tick."""
    t0 = ticks[0]
    return [abs((t - t0) - round((t - t0) / interval) * interval) for t in ticks]


@pytest.mark.slow
def test_slow_passes_do_not_shift_the_schedule():
    # each pass takes 40 % of the interval; a sleep(interval) loop would drift
    # by 80 ms per tick and be off the grid from the first tick on
    interval = 0.2
    source = TimedSource(work=0.08)
    sampler = Sampler(source, Store(), interval=interval)
    _run_for(sampler, 2.1)
    ticks = source.ticks
    assert len(ticks) >= 8
    assert max(_grid_errors(ticks, interval)) < 0.06
    slots = [round((t - ticks[0]) / interval) for t in ticks]
    assert slots == sorted(set(slots))  # one pass per grid slot
    assert slots[-1] <= len(ticks) + 1  # no drift: the slots are not running away
    assert sampler.passes == len(ticks)
    assert sampler.last_pass_seconds >= 0.08


@pytest.mark.slow
def test_a_pass_longer_than_the_interval_skips_ticks_instead_of_bunching():
    interval = 0.2
    source = TimedSource(work=0.0, slow_pass=3, slow_work=0.5)
    sampler = Sampler(source, Store(), interval=interval)
    _run_for(sampler, 2.0)
    ticks = source.ticks
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert min(gaps) > interval / 2  # no burst of catch-up passes after the slow one
    assert max(_grid_errors(ticks, interval)) < 0.06  # and back on the same grid


def test_a_failing_source_gives_an_error_frame_and_the_sampler_goes_on():
    source = TimedSource(fail_every=2)
    store = Store()
    frames = []
    store.listeners.subscribe(frames.append)
    sampler = Sampler(source, store, interval=0.1)
    _run_for(sampler, 0.75)
    assert len(frames) >= 4
    failed = [f for f in frames if f.error]
    good = [f for f in frames if not f.error]
    assert failed and good and good[-1].time > failed[0].time
    assert "NVML_ERROR_UNKNOWN" in failed[0].error
    assert failed[0].source == "timed" and failed[0].simulated
    assert sampler.errors == len(failed)


def test_sample_once_survives_a_failing_enricher():
    def broken(frame):
        raise ValueError("agent socket went away")

    def mark(frame):
        return Frame(time=frame.time, gpus=frame.gpus, source="enriched")

    store = Store()
    sampler = Sampler(TimedSource(), store, enrichers=[broken, mark], wall_clock=lambda: 1234.5)
    frame = sampler.sample_once()
    assert frame.source == "enriched" and frame.time == 1234.5
    assert store.latest is frame
    assert store.series(gpu_key(0, "used"))[1].tolist() == [1.0]
    assert sampler.errors == 1


def test_wall_clock_time_stamps_the_frames():
    clock = iter([100.0, 101.0, 102.5])
    source = TimedSource()
    sampler = Sampler(source, Store(), wall_clock=lambda: next(clock))
    times = [sampler.sample_once().time for _ in range(3)]
    assert times == source.nows == [100.0, 101.0, 102.5]


class Clocks:
    """A wall clock and a monotonic one moved by hand (``step`` moves the wall alone)."""

    def __init__(self, wall: float):
        self.wall, self.mono = wall, 50.0

    def tick(self, seconds: float = 1.0) -> None:
        self.wall += seconds
        self.mono += seconds


def test_frames_stay_in_time_order_when_the_wall_clock_steps_back():
    """An NTP step an hour back mid-run: the plots keep every sample, in order,
    one second apart, and a window of the last minute still finds the minute."""
    clocks = Clocks(wall=1_000_000.0)
    store = Store()
    sampler = Sampler(TimedSource(), store, wall_clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    stamps = []
    for k in range(120):
        if k == 60:
            clocks.wall -= 3600.0  # stepped back
        stamps.append(sampler.sample_once().time)
        clocks.tick()
    assert stamps == [1_000_000.0 + k for k in range(120)]  # on, at the monotonic clock's pace
    t, v = store.series(gpu_key(0, "used"))
    assert t.tolist() == stamps and v.tolist() == list(range(1, 121))
    t, v = store.series(gpu_key(0, "used"), stamps[-1] - 59.5)  # the last minute (and its edge)
    assert t.tolist()[-60:] == stamps[-60:] and v.tolist()[-60:] == list(range(61, 121))


def test_stamps_follow_the_wall_clock_forward_and_catch_it_up_after_a_step_back():
    clocks = Clocks(wall=5_000.0)
    clock = SteadyWallClock(lambda: clocks.wall, lambda: clocks.mono)
    assert clock() == 5_000.0
    clocks.tick()
    assert clock() == 5_001.0  # as the wall clock
    clocks.wall += 600.0  # stepped forward (a resume from suspend reads the same)
    assert clock() == 5_601.0
    clocks.wall -= 30.0  # back: on from the last stamp
    clocks.tick(0.5)
    assert clock() == 5_601.5
    clocks.wall += 40.0  # the wall clock passes the stamps again: followed
    clocks.tick()
    assert clock() == clocks.wall == 5_612.5


@pytest.mark.parametrize(
    "asked, got",
    [(0.01, MIN_INTERVAL), (0.1, 0.1), (1, 1.0), (5.5, 5.5), (600, MAX_INTERVAL), (-3, MIN_INTERVAL)],
)
def test_interval_is_clamped(asked, got):
    assert clamp_interval(asked) == got
    sampler = Sampler(TimedSource(), Store(), interval=asked)
    assert sampler.interval == got
    sampler.interval = 1.0
    sampler.interval = asked
    assert sampler.interval == got


@pytest.mark.slow
def test_changing_the_interval_while_running_takes_effect():
    source = TimedSource()
    sampler = Sampler(source, Store(), interval=60.0)
    sampler.start()
    try:
        time.sleep(0.2)
        assert len(source.ticks) == 1  # the first pass at once, the next in a minute
        sampler.interval = 60.0  # the same value: no extra pass
        time.sleep(0.2)
        assert len(source.ticks) == 1
        sampler.interval = 0.1
        time.sleep(0.55)
    finally:
        sampler.stop()
    assert len(source.ticks) >= 4


def test_stop_returns_promptly_from_a_long_wait():
    sampler = Sampler(TimedSource(), Store(), interval=60.0)
    sampler.start()
    time.sleep(0.05)
    t0 = time.monotonic()
    sampler.stop()
    assert time.monotonic() - t0 < 1.0
    assert not sampler.running
