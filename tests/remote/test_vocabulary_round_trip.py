"""Every kind of frame -- GPUs, processes, agents with modules, models, allocator
summaries, events, servers, hosts with alerts -- generated from the dataclasses'
own declarations, goes through the stream (whole frames and deltas, as the
window's sampler process and `--host` send them) and comes back as equal values
of the declared types. A field added later is covered by the same tests."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vocabulary import assert_typed, values_of
from vramscope.core.samples import Frame
from vramscope.core.stream import codec, protocol
from vramscope.core.stream.codec import UntypedField, frame_from_wire, frame_to_wire, to_wire
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer


def _unique_processes(frame: Frame) -> Frame:
    """A frame lists a GPU once (by host and index) and a GPU a process once (NVML's
    lists are by PID)."""
    gpus, places = [], set()
    for gpu in frame.gpus:
        if (gpu.host, gpu.index) in places:
            continue
        places.add((gpu.host, gpu.index))
        seen, kept = set(), []
        for p in gpu.processes:
            if p.pid not in seen:
                seen.add(p.pid)
                kept.append(p)
        gpus.append(dataclasses.replace(gpu, processes=tuple(kept)))
    return dataclasses.replace(frame, gpus=tuple(gpus))


frames = values_of(Frame).map(_unique_processes)
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _wire(message: dict) -> dict:
    return json.loads(protocol.encode(message))


@SETTINGS
@given(frames)
def test_a_whole_frame_comes_back_equal_and_typed(frame):
    back = frame_from_wire(_wire(frame_to_wire(frame)))
    assert_typed(Frame, back)
    assert to_wire(back) == to_wire(frame)


@SETTINGS
@given(st.lists(frames, min_size=1, max_size=3), st.integers(2, 3))
def test_frames_through_the_streams_deltas_come_back_equal_and_typed(stream, keyframe_every):
    writer, reader = FrameDiffer(keyframe_every=keyframe_every), FrameAssembler()
    for frame in stream:
        message = _wire(writer.message(frame, []))
        back, _alerts = (reader.whole if message["type"] == protocol.FRAME else reader.delta)(message)
        assert_typed(Frame, back)
        assert to_wire(back) == to_wire(frame)


def test_a_field_that_does_not_say_what_it_holds_is_refused_when_its_decoder_is_built():
    for untyped in (tuple, dict, list, typing.Any):

        @dataclasses.dataclass(frozen=True)
        class Loose:
            values: object = ()

        Loose.__annotations__["values"] = untyped
        with pytest.raises(UntypedField, match="Loose.values"):
            codec._builder(Loose)
