"""The window draws an agent's figures at the time the agent measured them, once
each: its sampler process sends the latest report with every frame, and the
window's store gets that sample's point at the sample's own time -- not the
frame's, and not again while the frame brings the same sample."""

from __future__ import annotations

from vramscope.core.agent_figures.agent_keys import series_key
from vramscope.core.samples import AgentDevice, AgentReport, Frame
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
