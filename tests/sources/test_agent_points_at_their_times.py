"""The window draws an agent's figures at the time the agent measured them, once
each: its sampler process sends each agent's report with every frame -- the
samples since the previous frame with it -- and the window's store gets each
sample's point at the sample's own time: not the frame's, not one a frame, and
not again while a frame brings the same sample."""

from __future__ import annotations

from vramscope.core.agent_figures.agent_keys import series_key
from vramscope.core.samples import (
    SAMPLES_PER_REPORT,
    AgentBuckets,
    AgentDevice,
    AgentReport,
    AgentSamplePoint,
    Frame,
)
from vramscope.core.store.store import Store
from vramscope.sources.remote.local_sampler import window_enrichers


def report(sample_time: float, allocated: int) -> AgentReport:
    return AgentReport(
        pid=4242,
        start_time=100.0,
        time=sample_time,
        devices=(AgentDevice(device="cuda:0", allocated=allocated, reserved=2 * allocated),),
    )


def test_each_sample_is_drawn_once_at_its_own_time():
    store = Store()
    (enrich,) = window_enrichers(store)
    # frames every second; the agent sampled at 9.6 s, again at 10.6 s, then not until 12.6 s
    for frame_time, sample_time, allocated in (
        (10.0, 9.6, 1 << 20),
        (11.0, 10.6, 2 << 20),
        (12.0, 10.6, 2 << 20),
    ):
        frame = Frame(time=frame_time, agents=(report(sample_time, allocated),))
        store.append(enrich(frame))
    t, v = store.series(series_key(4242, 100.0, "cuda:0", "allocated"))
    assert t.tolist() == [9.6, 10.6]
    assert v.tolist() == [1 << 20, 2 << 20]


def test_a_report_without_a_sample_time_is_drawn_at_the_frames():
    store = Store()
    (enrich,) = window_enrichers(store)
    store.append(enrich(Frame(time=10.0, agents=(report(None, 1 << 20),))))
    t, _ = store.series(series_key(4242, 100.0, "cuda:0", "allocated"))
    assert t.tolist() == [10.0]


def device(allocated: int, peak: int, outside: int | None = None) -> AgentDevice:
    return AgentDevice(
        device="cuda:0",
        allocated=allocated,
        reserved=2 * allocated,
        peak_allocated=peak,
        buckets=AgentBuckets(weights=allocated // 2, outside_pytorch=outside),
    )


def live_report(times: list[float], outside: int = 300 << 20) -> AgentReport:
    """A live client's report: every sample since the previous frame, each with its own
    peak; ``devices`` the newest with the interval's peak and outside PyTorch."""
    samples = tuple(
        AgentSamplePoint(t, 7, (device(int(t * 10) << 20, int(t * 10 + 1) << 20),)) for t in times
    )
    top = max(int(t * 10 + 1) for t in times) << 20
    return AgentReport(
        pid=4242,
        start_time=100.0,
        time=times[-1],
        devices=(device(int(times[-1] * 10) << 20, top, outside),),
        samples=samples,
    )


def test_a_report_carrying_its_samples_draws_each_at_its_own_time_with_its_own_peak():
    """Frames every 2 s, the agent sampling every 0.5 s: four points a frame, each with the
    peak since the sample before it -- the interval's peak is not drawn again at the
    newest -- and outside PyTorch (the monitor's bucket) at the frame's time."""
    store = Store()
    (enrich,) = window_enrichers(store)
    for frame_time, times in ((12.0, [10.4, 10.9, 11.4, 11.9]), (14.0, [12.4, 12.9, 13.4, 13.9])):
        store.append(enrich(Frame(time=frame_time, agents=(live_report(times),))))
    store.append(enrich(Frame(time=16.0, agents=(live_report([12.4, 12.9, 13.4, 13.9]),))))  # (sent again)
    t, v = store.series(series_key(4242, 100.0, "cuda:0", "allocated"))
    assert t.tolist() == [10.4, 10.9, 11.4, 11.9, 12.4, 12.9, 13.4, 13.9]
    assert v.tolist() == [int(x * 10) << 20 for x in t.tolist()]
    _, peaks = store.series(series_key(4242, 100.0, "cuda:0", "peak_allocated"))
    assert peaks.tolist() == [int(x * 10 + 1) << 20 for x in t.tolist()]
    t, v = store.series(series_key(4242, 100.0, "cuda:0", "outside_pytorch"))
    assert t.tolist() == [12.0, 14.0, 16.0] and set(v.tolist()) == {300 << 20}


def test_a_hosts_report_draws_at_most_a_reports_worth_of_samples_in_time_order():
    """Another machine's stream is input: ten thousand samples in one report, out of
    order, draw the newest SAMPLES_PER_REPORT of them, in time order."""
    store = Store()
    (enrich,) = window_enrichers(store)
    times = [1000.0 + i / 100 for i in range(10_000)]
    times[-1], times[-2] = times[-2], times[-1]
    store.append(enrich(Frame(time=1200.0, agents=(live_report(times),))))
    t, _ = store.series(series_key(4242, 100.0, "cuda:0", "allocated"))
    assert len(t) == SAMPLES_PER_REPORT and t.tolist() == sorted(t.tolist())
