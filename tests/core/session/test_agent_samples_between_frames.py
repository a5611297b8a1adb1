"""A recording keeps every agent sample at its own time: frames slower than the
agent samples (`record --interval 2` beside an agent at 0.5 s) write the samples
each frame's reports carry, a frame that brings no new sample writes no stale
copy, and a replayed frame shows each agent's newest sample up to it -- while
files written before, one agent row a frame at the frame's time, replay as they
did."""

from __future__ import annotations

import dataclasses

from vramscope.core.agent_figures.agent_keys import series_key
from vramscope.core.samples import AgentBuckets, AgentDevice, AgentSamplePoint, Frame
from vramscope.core.session import SessionWriter, load_into_store, open_session
from vramscope.core.store.store import Store
from vramscope.core.units import MiB

from tests.core.session.helpers import T0, frame

OUTSIDE = 300 * MiB


def device(t: float, outside: int | None = None) -> AgentDevice:
    mib = int((t - T0) * 10)
    return AgentDevice(
        device="cuda:0",
        gpu_uuid="GPU-aaaa",
        allocated=mib * MiB,
        reserved=4096 * MiB,
        peak_allocated=(mib + 1) * MiB,
        buckets=AgentBuckets(weights=512 * MiB, outside_pytorch=outside),
    )


def live_frame(k: int, times: list[float]) -> Frame:
    """Pass k of the session helpers' machine, its agent's report as a live client makes
    it: the samples since the previous frame (none: the agent sampled nothing new)."""
    base = frame(k)
    (agent,) = base.agents
    newest = times[-1] if times else T0 + 2 * k - 2.1  # (the previous frame's newest)
    report = dataclasses.replace(
        agent,
        time=newest,
        step=k,
        devices=(device(newest, OUTSIDE),),
        samples=tuple(AgentSamplePoint(t, k, (device(t),)) for t in times),
        events=(),
    )
    return dataclasses.replace(base, time=T0 + 2 * k, agents=(report,))


def recorded(path) -> list[float]:
    """Frames every 2 s (k = 1, 2, 3), the agent every 0.5 s; frame 4 brings nothing new."""
    writer = SessionWriter(path, meta={"source": "test", "simulated": True})
    store = Store()
    store.listeners.subscribe(writer)
    sampled = []
    for k in (1, 2, 3):
        times = [T0 + 2 * k - 2 + 0.5 * i - 0.1 for i in range(1, 5)]
        sampled += times
        store.append(live_frame(k, times))
    store.append(live_frame(4, []))
    writer.close()
    return sampled


def test_every_sample_is_in_the_file_at_its_own_time_and_none_twice(tmp_path):
    path = tmp_path / "s.vramscope"
    sampled = recorded(path)
    with open_session(path) as r:
        rows = r.recorded.agent_rows()
        loaded = load_into_store(r)
    assert [row["t"] for row in rows] == sampled  # twelve samples, no stale copy at frame 4
    assert [row["allocated"] for row in rows] == [device(t).allocated for t in sampled]
    assert [row["peak_allocated"] for row in rows] == [device(t).peak_allocated for t in sampled]
    assert [row["outside_pytorch"] for row in rows] == [
        OUTSIDE if t in sampled[3::4] else None for t in sampled
    ]
    t, _ = loaded.series(series_key(4242, T0 - 100, "cuda:0", "allocated"))
    assert t.tolist() == [x for x in sampled if x >= T0 + 2]  # reopened: from the first frame on


def test_a_replayed_frame_shows_the_newest_sample_up_to_it(tmp_path):
    path = tmp_path / "s.vramscope"
    sampled = recorded(path)
    with open_session(path) as r:
        for k in (1, 2, 3, 4):
            (agent,) = r.frame_at(T0 + 2 * k).agents
            newest = max(t for t in sampled if t <= T0 + 2 * k)
            assert agent.time == newest
            assert agent.devices[0].allocated == device(newest).allocated


def test_a_file_with_one_agent_row_a_frame_replays_as_before(tmp_path):
    """Reports without samples (the demo's, a replayed session's, an older sampler's)
    are written at the frame's time, one a frame, and replay frame by frame."""
    path = tmp_path / "s.vramscope"
    writer = SessionWriter(path, meta={"source": "test", "simulated": True})
    store = Store()
    store.listeners.subscribe(writer)
    for k in range(6):
        store.append(frame(k))
    writer.close()
    with open_session(path) as r:
        assert [row["t"] for row in r.recorded.agent_rows()] == [T0 + k for k in range(6)]
        for k in range(6):
            (agent,) = r.frame_at(T0 + k).agents
            assert agent.step == k and agent.devices == frame(k).agents[0].devices


def test_the_first_replayed_frame_shows_no_run_that_ended_long_before(tmp_path):
    """The first frame of a recording brings, beside the live run, an ended run's final
    dump read from the runtime directory -- its samples an hour old: a replayed first
    frame shows the live run alone, as later ones do."""
    path = tmp_path / "s.vramscope"
    writer = SessionWriter(path, meta={"source": "test", "simulated": True})
    store = Store()
    store.listeners.subscribe(writer)
    first = live_frame(1, [T0 + 1.4, T0 + 1.9])
    (live,) = first.agents
    ended = dataclasses.replace(
        live,
        pid=777,
        start_time=T0 - 7200,
        time=T0 - 3600,
        connected=False,
        devices=(device(T0 - 3600),),
        samples=(AgentSamplePoint(T0 - 3600, 5, (device(T0 - 3600),)),),
    )
    store.append(dataclasses.replace(first, agents=(live, ended)))
    store.append(live_frame(2, [T0 + 2.4, T0 + 2.9, T0 + 3.4, T0 + 3.9]))
    writer.close()
    with open_session(path) as r:
        assert {row["t"] for row in r.recorded.agent_rows()} >= {T0 - 3600}  # (kept in the file)
        assert [a.pid for a in r.frame_at(T0 + 2).agents] == [4242]
        assert [a.pid for a in r.frame_at(T0 + 4).agents] == [4242]
