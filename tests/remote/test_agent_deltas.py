"""The agents in a stream's deltas (version 3, core/stream/agent_deltas.py):
each delta carries only the fields of an agent's report that changed, and the
reader still gets every report exactly as the writer had it (the fields that
equality leaves out too: models, modules, allocator settings); older streams
are still read, and an older reader is told which version it needs."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remote.test_stream_protocol import devices, events, json_values
from vramscope.core.agent_figures.module_figures import ModuleFigures
from vramscope.core.samples import AgentDevice, AgentReport, Frame
from vramscope.core.stream import codec, protocol
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer
from vramscope.sources.remote.host_stream import RemoteHost

# a small pool of agents, so that frames in a row share most of them
agent_reports = st.builds(
    AgentReport,
    pid=st.integers(1, 4),
    start_time=st.sampled_from([None, 100.0, 200.5]),
    time=st.none() | st.floats(0, 2e9),
    step=st.none() | st.integers(0, 3),
    devices=st.lists(devices, max_size=2).map(tuple),
    events=st.lists(events, max_size=2).map(tuple),
    connected=st.booleans(),
    error=st.none() | st.just("process ended"),
    allocator_settings=st.fixed_dictionaries({"expandable_segments": st.booleans()}),
    models=st.lists(
        st.fixed_dictionaries({"name": st.sampled_from(["a", "b"]), "params": st.integers(0, 9)}), max_size=2
    ).map(tuple),
    measured_input=st.none() | st.fixed_dictionaries({"batch": st.integers(1, 4)}),
)
agent_frames = st.builds(
    Frame,
    time=st.floats(0, 2e9),
    agents=st.lists(agent_reports, max_size=4).map(tuple),
)


def wire(message: dict) -> dict:
    return json.loads(protocol.encode(message))


def read(reader: FrameAssembler, message: dict):
    m = wire(message)
    return (reader.whole if m["type"] == protocol.FRAME else reader.delta)(m)


def whole_wire(reports) -> list:
    """Every field of each report, those equality leaves out included."""
    return [codec.to_wire(r) for r in reports]


@settings(max_examples=200)
@given(st.lists(agent_frames, min_size=1, max_size=8), st.integers(2, 5))
def test_the_reader_gets_every_agent_report_exactly_as_written(stream, keyframe_every):
    writer, reader = FrameDiffer(keyframe_every=keyframe_every), FrameAssembler()
    for frame in stream:
        got, _ = read(reader, writer.message(frame, []))
        assert got == frame
        assert whole_wire(got.agents) == whole_wire(frame.agents)


def training(step: int, events=()) -> AgentReport:
    return AgentReport(
        pid=4242,
        start_time=1000.5,
        hostname="box",
        time=2000.0 + step,
        step=step,
        devices=(AgentDevice(device="cuda:0", allocated=1 << 30, reserved=2 << 30),),
        events=events,
        allocator_settings={"backend": "native", "expandable_segments": False},
        models=({"name": "Sequential", "params": 68362, "tensors": 4, "dtypes": {"float32": 68362}},),
        modules=tuple(ModuleFigures(str(i), None, 1 << 20, None, None, 32768, 1) for i in range(3)),
        measured_input={"batch": 32, "seq": None, "output_bytes": 1280},
        recent_events=(),
    )


def test_a_training_agent_sends_only_its_moving_fields_and_keeps_the_rest():
    writer, reader = FrameDiffer(), FrameAssembler()
    before, _ = read(reader, writer.message(Frame(time=1.0, agents=(training(1),)), []))
    message = writer.message(Frame(time=2.0, agents=(training(2),)), [])
    assert "top" not in message
    assert message["ag"] == [{"k": [4242, 1000.5], "s": {"time": 2002.0, "step": 2}}]
    after, _ = read(reader, message)
    assert after.agents == (training(2),)
    assert after.agents[0].models is before.agents[0].models
    assert after.agents[0].modules is before.agents[0].modules
    same = writer.message(Frame(time=3.0, agents=(training(2),)), [])
    assert "ag" not in same and read(reader, same)[0].agents == (training(2),)


def test_new_events_come_and_go_with_the_frame():
    from vramscope.core.samples import AgentEvent

    writer, reader = FrameDiffer(), FrameAssembler()
    read(reader, writer.message(Frame(time=1.0, agents=(training(1),)), []))
    step = AgentEvent(kind="step", time=5.0, data={"step": 2})
    got, _ = read(reader, writer.message(Frame(time=2.0, agents=(training(2, (step,)),)), []))
    assert got.agents[0].events == (step,)
    message = writer.message(Frame(time=3.0, agents=(training(3),)), [])
    assert message["ag"][0]["d"] == ["events"]
    got, _ = read(reader, message)
    assert got.agents[0].events == ()


def test_an_agent_that_comes_travels_whole_and_one_that_goes_is_dropped():
    other = dataclasses.replace(training(1), pid=7, start_time=None)
    writer, reader = FrameDiffer(), FrameAssembler()
    read(reader, writer.message(Frame(time=1.0, agents=(training(1),)), []))
    message = writer.message(Frame(time=2.0, agents=(training(1), other)), [])
    assert message["ag"][1] == {"w": codec.to_wire(other)}
    assert read(reader, message)[0].agents == (training(1), other)
    assert read(reader, writer.message(Frame(time=3.0, agents=(other,)), []))[0].agents == (other,)
    assert read(reader, writer.message(Frame(time=4.0), []))[0].agents == ()


@pytest.mark.parametrize(
    "bad",
    [
        {"k": [4242, 1000.5], "s": {"step": "many"}},
        {"k": [4242, 1000.5], "s": {"pid": 5}},
        {"k": [4242, 1000.5], "d": ["no such field"]},
        {"k": [99, None], "s": {"step": 1}},
        {"k": 4242},
        {"w": {"pid": "x"}},
        "an agent",
    ],
)
def test_an_agent_delta_that_does_not_fit_is_refused_and_the_next_keyframe_read(bad):
    writer, reader = FrameDiffer(keyframe_every=3), FrameAssembler()
    read(reader, writer.message(Frame(time=1.0, agents=(training(1),)), []))
    message = wire(writer.message(Frame(time=2.0, agents=(training(2),)), []))
    with pytest.raises(ValueError, match="does not fit"):
        reader.delta({**message, "ag": [bad]})
    writer.message(Frame(time=3.0, agents=(training(3),)), [])
    got, _ = read(reader, writer.message(Frame(time=4.0, agents=(training(4),)), []))  # the keyframe
    assert got.agents == (training(4),)


@settings(max_examples=200)
@given(json_values)
def test_any_json_as_the_agents_delta_is_read_or_refused_never_raised_otherwise(value):
    writer, reader = FrameDiffer(), FrameAssembler()
    read(reader, writer.message(Frame(time=1.0, agents=(training(1),)), []))
    message = wire(writer.message(Frame(time=2.0, agents=(training(2),)), []))
    try:
        frame, _ = reader.delta({**message, "ag": value})
    except ValueError:
        return
    assert all(isinstance(r, AgentReport) for r in frame.agents)


def test_a_version_2_stream_with_its_agents_in_the_top_is_still_read():
    v2 = {"pid": 4242, "start_time": 1000.5, "step": 1}
    host = RemoteHost("old-box")
    frames = FrameAssembler()
    host._handle(wire({**protocol.hello("old-box", "0.9", 1.0), "version": 2}), frames)
    host._handle(
        wire({"type": "frame", "frame": {"time": 1.0, "agents": [v2]}, "alerts": [], "seq": 1}), frames
    )
    host._handle(
        wire({"type": "delta", "seq": 2, "time": 2.0, "top": {"agents": [{**v2, "step": 2}]}}), frames
    )
    assert [r.step for r in host.snapshot().frame.agents] == [2]
    host._handle(
        wire({"type": "delta", "seq": 3, "time": 3.0, "top": {}}), frames
    )  # version 2: no agents left
    assert host.snapshot().frame.agents == () and host.refused == 0


def test_a_reader_of_version_2_at_most_is_told_which_version_it_needs(monkeypatch):
    hello = protocol.encode(protocol.hello("box", "2.0", 1.0))
    monkeypatch.setattr(protocol, "READABLE_VERSIONS", (1, 2))
    with pytest.raises(
        protocol.VersionMismatch,
        match=f"speaks stream version {protocol.STREAM_VERSION}.*install the same vramscope",
    ):
        protocol.LineDecoder().feed(hello)


def test_a_steady_agents_delta_is_a_small_part_of_its_report():
    writer = FrameDiffer()
    writer.message(Frame(time=1.0, agents=(training(1),)), [])
    delta = writer.message(Frame(time=2.0, agents=(training(2),)), [])
    assert len(protocol.encode(delta)) * 4 < len(json.dumps(codec.to_wire(training(2))))
