"""Deltas (core/stream/deltas.py): a stream of whole frames and what changed
between them gives the reader exactly the frames the writer had, whatever
changed, came or went -- and a delta that does not follow is refused."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remote.test_stream_protocol import infos, opt_int, opt_text, reports
from vramscope.core.samples import Frame, GpuProcess, GpuSample
from vramscope.core.stream import protocol
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer
from vramscope.core.processes.user_totals import user_totals

# a small pool of pids and GPU indices, so that frames in a row share most of them
procs = st.builds(
    GpuProcess,
    pid=st.integers(1, 8),
    used=st.none() | st.integers(0, 3),
    sm=st.none() | st.integers(0, 2),
    info=st.none() | infos,
    mig_uuid=st.none() | st.sampled_from(["MIG-a", "MIG-b"]),
)
gpus = st.builds(
    GpuSample,
    index=st.integers(0, 4),
    name=opt_text,
    used=opt_int,
    util_gpu=st.none() | st.integers(0, 2),
    error=opt_text,
    processes=st.lists(procs, max_size=6, unique_by=lambda p: (p.pid, p.mig_uuid)).map(tuple),
)
frames = st.builds(
    Frame,
    time=st.floats(0, 2e9),
    source=st.sampled_from(["nvml", "demo"]),
    gpus=st.lists(gpus, max_size=4, unique_by=lambda g: g.index).map(tuple),
    error=st.none() | st.just("driver gone"),
    agents=st.lists(reports, max_size=1).map(tuple),
)
alert_lists = st.lists(
    st.fixed_dictionaries({"title": st.sampled_from(["a", "b"]), "gpu": st.integers(0, 2)}), max_size=2
)


def wire(message: dict) -> dict:
    return json.loads(protocol.encode(message))


def read(reader: FrameAssembler, message: dict):
    m = wire(message)
    return (reader.whole if m["type"] == protocol.FRAME else reader.delta)(m)


@pytest.mark.slow
@settings(max_examples=200)
@given(st.lists(st.tuples(frames, alert_lists), min_size=1, max_size=8), st.integers(2, 5))
def test_deltas_give_the_reader_the_writers_frames_exactly(stream, keyframe_every):
    writer, reader = FrameDiffer(keyframe_every=keyframe_every), FrameAssembler()
    for frame, alerts in stream:
        got, got_alerts = read(reader, writer.message(frame, alerts))
        assert got == frame
        assert user_totals(got) == user_totals(frame)  # (read off the reader's columns)
        assert [g.processes for g in got.gpus] == [g.processes for g in frame.gpus]  # in order
        assert got_alerts == alerts


def busy(k: int, changed: int) -> Frame:
    return Frame(
        time=float(k),
        gpus=tuple(
            GpuSample(
                index=g,
                used=g,
                processes=tuple(
                    GpuProcess(pid=g * 100 + p, used=p + (k if p < changed else 0)) for p in range(50)
                ),
            )
            for g in range(4)
        ),
    )


def test_a_steady_machine_sends_only_what_changed():
    writer = FrameDiffer()
    first = writer.message(busy(0, 3), [])
    second = writer.message(busy(1, 3), [])
    assert first["type"] == protocol.FRAME and second["type"] == protocol.DELTA
    assert [len(g["u"]["k"]) for g in second["g"].values()] == [3, 3, 3, 3]
    assert len(protocol.encode(second)) * 10 < len(protocol.encode(first))


def test_unchanged_processes_keep_their_rows_and_descriptions():
    """What the views skip by identity: an unchanged process's row and a
    description that did not change are the same objects frame to frame."""
    writer, reader = FrameDiffer(), FrameAssembler()
    before, _ = read(reader, writer.message(busy(0, 1), []))
    after, _ = read(reader, writer.message(busy(1, 1), []))
    was, now = before.gpus[0].processes, after.gpus[0].processes
    assert now.rows[1] is was.rows[1] and now.rows[0] is not was.rows[0]
    assert all(a is b for a, b in zip(now.infos, was.infos))
    assert after.gpus[0].processes[0].used == 1


def test_a_delta_that_does_not_follow_is_refused_until_the_next_whole_frame():
    writer, reader = FrameDiffer(keyframe_every=3), FrameAssembler()
    read(reader, writer.message(busy(0, 1), []))
    writer.message(busy(1, 1), [])  # lost on the way
    with pytest.raises(ValueError, match="does not follow"):
        read(reader, writer.message(busy(2, 1), []))
    frame, _ = read(reader, writer.message(busy(3, 1), []))  # the next keyframe
    assert frame == busy(3, 1)


def test_a_version_1_stream_of_whole_frames_is_still_read():
    reader = FrameAssembler()
    for k in range(3):  # version 1 wrote no seq
        frame, alerts = reader.whole(
            wire({"type": "frame", "frame": writer_wire(busy(k, 1)), "alerts": [{"title": "x"}]})
        )
        assert frame == busy(k, 1) and alerts == [{"title": "x"}]
    assert protocol.check_hello({**protocol.hello("old", "0.9", 1.0), "version": 1})


def writer_wire(frame):
    from vramscope.core.stream.codec import frame_to_wire

    return frame_to_wire(frame)


@pytest.mark.parametrize(
    "bad",
    [
        {"g": {"0": {"p": [{"pid": "x"}]}}},
        {"g": {"9": {"p": []}}},
        {"g": {"0": {"o": [1, 2]}}},
        {"go": [7]},
        {"top": []},
    ],
)
def test_a_delta_that_does_not_fit_is_refused(bad):
    writer, reader = FrameDiffer(), FrameAssembler()
    read(reader, writer.message(busy(0, 1), []))
    with pytest.raises(ValueError):
        reader.delta({"type": "delta", "seq": 2, "time": 1.0, **bad})


def test_moving_figures_travel_as_columns_and_keep_the_description():
    writer, reader = FrameDiffer(), FrameAssembler()
    before, _ = read(reader, writer.message(busy(0, 2), []))
    message = writer.message(busy(1, 2), [])
    assert [len(g["u"]["k"]) for g in message["g"].values()] == [2, 2, 2, 2]
    assert all("p" not in g for g in message["g"].values())
    after, _ = read(reader, message)
    assert after == busy(1, 2)
    assert after.gpus[0].processes[0].info is before.gpus[0].processes[0].info


@pytest.mark.parametrize(
    "bad", [{"k": [1], "used": ["lots"]}, {"k": [999], "used": [1]}, {"k": [0, 1], "used": [1]}, {"k": 3}]
)
def test_a_column_patch_that_does_not_fit_is_refused(bad):
    writer, reader = FrameDiffer(), FrameAssembler()
    read(reader, writer.message(busy(0, 1), []))
    with pytest.raises(ValueError):
        reader.delta({"type": "delta", "seq": 2, "time": 1.0, "g": {"0": {"u": bad}}})


def test_a_gpu_nothing_of_which_changed_is_the_same_sample_and_a_gpu_gone_is_dropped():
    writer, reader = FrameDiffer(), FrameAssembler()
    first = busy(0, 1)
    before, _ = read(reader, writer.message(first, []))
    moved = dataclasses.replace(first, time=1.0, gpus=(busy(1, 1).gpus[0], *first.gpus[1:]))
    after, _ = read(reader, writer.message(moved, []))
    assert after == moved
    assert after.gpus[0] is not before.gpus[0] and after.gpus[1] is before.gpus[1]
    fewer = dataclasses.replace(moved, time=2.0, gpus=moved.gpus[1:])
    last, _ = read(reader, writer.message(fewer, []))
    assert last == fewer and [g.index for g in last.gpus] == [1, 2, 3]


def test_a_keyframe_gives_back_the_values_of_what_did_not_change():
    writer, reader = FrameDiffer(keyframe_every=2), FrameAssembler()
    read(reader, writer.message(busy(0, 1), []))
    before, _ = read(reader, writer.message(busy(1, 1), []))
    message = writer.message(busy(2, 1), [])
    assert message["type"] == protocol.FRAME  # the keyframe
    after, _ = read(reader, message)
    assert after == busy(2, 1)
    assert after.gpus[0].processes.rows[1] is before.gpus[0].processes.rows[1]
    assert after.gpus[0].processes.rows[0] is not before.gpus[0].processes.rows[0]


@settings(max_examples=100)
@given(frames)
def test_the_writers_wire_is_the_codecs(frame):
    """What the writer makes per process (with a description made once) is what
    the codec makes of the frame, for any frame (version 3: processes nested;
    version 4's flat form: tests/remote/test_flat_processes.py)."""
    from vramscope.core.stream.codec import frame_to_wire

    writer = FrameDiffer(version=3)
    message = writer.message(frame, [])
    again = writer.message(frame, [])  # (the second time from the values it holds)
    assert message["frame"] == frame_to_wire(frame)
    assert again["type"] == protocol.DELTA and "g" not in again


def test_a_big_machines_whole_frame_comes_ten_times_less_often():
    from vramscope.core.stream.deltas import BIG_FRAME

    many = Frame(
        time=0.0,
        gpus=(GpuSample(index=0, processes=tuple(GpuProcess(pid=p, used=p) for p in range(BIG_FRAME + 1))),),
    )
    writer = FrameDiffer(keyframe_every=3)
    kinds = [writer.message(dataclasses.replace(many, time=float(k)), [])["type"] for k in range(25)]
    assert kinds.count(protocol.FRAME) == 1  # the first; the next at 30
    small = FrameDiffer(keyframe_every=3)
    assert [small.message(busy(k, 1), [])["type"] for k in range(7)].count(protocol.FRAME) == 3
