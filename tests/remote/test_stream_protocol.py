"""The stream protocol's framing and the frame codec, against arbitrary input:
any chunking, garbage, over-long and truncated lines, another version."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vramscope.core.samples import (
    AgentBuckets,
    AgentDevice,
    AgentEvent,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
    ProcessInfo,
)
from vramscope.core.processes.servers import ServerState
from vramscope.core.stream import protocol
from vramscope.core.stream.codec import LIMIT_FLOAT, FrameDecoder, frame_from_wire, frame_to_wire

HELLO = protocol.encode(protocol.hello("box", "0.1.0", 1.0))

messages = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from([protocol.FRAME, protocol.RESULT, protocol.ERROR]),
            "n": st.integers(-(2**53), 2**53),
            "text": st.text(max_size=40),
        }
    ),
    max_size=8,
)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points + [len(data)]:
        pieces.append(data[last:p])
        last = p
    return pieces


def decode_all(pieces) -> tuple[protocol.LineDecoder, list[dict]]:
    decoder = protocol.LineDecoder()
    out = []
    for piece in pieces:
        out += decoder.feed(piece)
    return decoder, out


@given(messages, st.lists(st.integers(0, 10_000), max_size=12))
def test_messages_arrive_whole_whatever_the_chunking(msgs, cuts):
    data = HELLO + b"".join(protocol.encode(m) for m in msgs)
    decoder, out = decode_all(chunked(data, cuts))
    assert out[0]["type"] == protocol.HELLO
    assert out[1:] == msgs
    assert decoder.bad_lines == 0 and decoder.pending == 0


@given(messages, st.integers(1, 10_000))
def test_a_peer_that_dies_mid_line_loses_only_that_line(msgs, cut):
    lines = [protocol.encode(m) for m in msgs]
    data = HELLO + b"".join(lines)
    cut = len(HELLO) + cut % (len(data) - len(HELLO) + 1)
    decoder, out = decode_all([data[:cut]])
    whole = 0
    used = len(HELLO)
    for line in lines:
        if used + len(line) > cut:
            break
        whole += 1
        used += len(line)
    assert out[1:] == msgs[:whole]  # every complete line, nothing made up from the tail
    assert decoder.pending == cut - used


@given(st.lists(st.binary(max_size=60).filter(lambda b: b"\n" not in b), max_size=10), messages)
def test_garbage_lines_after_the_hello_are_skipped_not_fatal(garbage, msgs):
    data = HELLO
    for g, m in zip(garbage + [None] * len(msgs), msgs + [None] * len(garbage)):
        if g is not None:
            data += g + b"\n"
        if m is not None:
            data += protocol.encode(m)
    decoder, out = decode_all([data])
    assert out[1:] == msgs
    bad = [g for g in garbage if not _is_message(g)]
    assert decoder.bad_lines == len(bad)


def _is_message(line: bytes) -> bool:
    try:
        value = json.loads(line.decode())
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def test_a_login_banner_before_the_hello_is_skipped():
    banner = b"Welcome to Ubuntu 24.04 LTS\n\n * Documentation:  https://help.ubuntu.com\n"
    decoder, out = decode_all([banner + HELLO + protocol.encode({"type": "frame"})])
    assert [m["type"] for m in out] == [protocol.HELLO, protocol.FRAME]
    assert decoder.noise_lines == 3


def test_output_that_never_says_hello_is_refused():
    decoder = protocol.LineDecoder(max_noise=5)
    with pytest.raises(protocol.StreamError, match="did not start a vramscope stream"):
        decoder.feed(b"usage: something else\n" * 6)


def test_another_version_is_a_clear_error():
    other = protocol.encode({**protocol.hello("box", "9.0", 1.0), "version": protocol.STREAM_VERSION + 1})
    with pytest.raises(protocol.VersionMismatch, match="install the same vramscope version"):
        protocol.LineDecoder().feed(other)


@given(st.integers(1, 5), st.binary(min_size=1, max_size=50).filter(lambda b: b"\n" not in b))
def test_an_over_long_line_is_dropped_whole_and_the_next_one_read(extra, junk):
    decoder = protocol.LineDecoder(max_line=64)
    out = decoder.feed(HELLO[:0])  # nothing yet
    decoder.hello = protocol.check_hello(json.loads(HELLO))
    long_line = b'{"type":"frame","pad":"' + b"x" * 64 * extra + b'"}\n'
    out = decoder.feed(long_line[:70]) + decoder.feed(long_line[70:] + junk + b"\n")
    out += decoder.feed(protocol.encode({"type": "result", "id": 1}))
    assert out == [{"type": "result", "id": 1}]
    assert decoder.bad_lines == 2  # the long line and the junk line


def test_a_message_over_the_limit_is_not_written():
    with pytest.raises(ValueError, match="exceeds"):
        protocol.encode({"type": "frame", "pad": "x" * protocol.MAX_LINE})


# -- the codec: a frame survives the wire exactly ------------------------------------------

opt_int = st.none() | st.integers(0, 2**50)
opt_text = st.none() | st.text(max_size=12)
argument = st.text(st.characters(blacklist_characters="\0"), max_size=8)  # argv holds no NUL (execve(2))
opt_float = st.none() | st.floats(-LIMIT_FLOAT, LIMIT_FLOAT, width=64)  # the wire's bounds
infos = st.builds(
    ProcessInfo,
    pid=st.integers(1, 2**22),
    start_time=opt_float,
    user=opt_text,
    name=opt_text,
    cmdline=st.none() | st.tuples(argument),
    ppid=st.none() | st.integers(0, 9999),
    status=opt_text,
    visibility=st.sampled_from(["ok", "access-denied", "exited", "not-visible"]),
    parent_alive=st.none() | st.booleans(),
)
procs = st.builds(
    GpuProcess,
    pid=st.integers(1, 2**22),
    used=opt_int,
    kinds=st.sampled_from([("compute",), ("graphics",), ("compute", "graphics")]),
    sm=st.none() | st.integers(0, 100),
    info=st.none() | infos,
    has_agent=st.booleans(),
)
gpus = st.builds(
    GpuSample,
    index=st.integers(0, 15),
    name=opt_text,
    uuid=opt_text,
    total=opt_int,
    used=opt_int,
    free=opt_int,
    reserved=opt_int,
    power_w=opt_float,
    processes=st.lists(procs, max_size=3).map(tuple),
    error=opt_text,
    host=opt_text,
    host_index=st.none() | st.integers(0, 7),
)
devices = st.builds(
    AgentDevice,
    device=st.sampled_from(["cuda:0", "cuda:1", "cpu"]),
    allocated=opt_int,
    reserved=opt_int,
    buckets=st.none() | st.builds(AgentBuckets, weights=opt_int, gradients=opt_int, outside_pytorch=opt_int),
)
events = st.builds(
    AgentEvent,
    kind=st.sampled_from(["step", "oom"]),
    time=st.floats(0, 2e9),
    data=st.fixed_dictionaries({"step": st.integers(0, 10**6)}),
)
reports = st.builds(
    AgentReport,
    pid=st.integers(1, 2**22),
    start_time=opt_float,
    rank=st.none() | st.integers(0, 7),
    devices=st.lists(devices, max_size=2).map(tuple),
    events=st.lists(events, max_size=2).map(tuple),
    connected=st.booleans(),
    allocator_settings=st.fixed_dictionaries({"expandable_segments": st.booleans()}),
)
servers = st.builds(
    ServerState,
    pid=st.integers(1, 2**22),
    start_time=opt_float,
    kind=st.sampled_from(["vllm", "sglang", "ollama"]),
    pids=st.lists(st.integers(1, 2**22), max_size=3).map(tuple),
    port=opt_int,
    kv_cache_usage=st.none() | st.floats(0, 1),
    running=opt_float,
    metrics_error=opt_text,
)
frames = st.builds(
    Frame,
    time=st.floats(0, 2e9),
    gpus=st.lists(gpus, max_size=3).map(tuple),
    source=st.sampled_from(["nvml", "demo"]),
    simulated=st.booleans(),
    error=opt_text,
    driver_version=opt_text,
    agents=st.lists(reports, max_size=2).map(tuple),
    servers=st.lists(servers, max_size=2).map(tuple),
)


@settings(max_examples=150)
@given(frames)
def test_a_frame_survives_the_wire_exactly(frame):
    line = protocol.encode({"type": protocol.FRAME, "frame": frame_to_wire(frame)})
    back = frame_from_wire(json.loads(line)["frame"])
    assert back == frame
    for a, b in zip(back.agents, frame.agents):  # fields left out of ==
        assert a.allocator_settings == b.allocator_settings
        assert [e.data for e in a.events] == [e.data for e in b.events]


@pytest.mark.slow
@settings(max_examples=100)
@given(st.lists(frames, min_size=1, max_size=4))
def test_a_stream_decoder_gives_each_frame_exactly_whatever_came_before(stream):
    """One FrameDecoder per connection reuses unchanged process descriptions:
    never at the cost of a figure (a changed one, a pid seen on two GPUs)."""
    decoder = FrameDecoder()
    for frame in stream + stream[:1]:
        line = protocol.encode({"type": protocol.FRAME, "frame": frame_to_wire(frame)})
        assert decoder.decode(json.loads(line)["frame"]) == frame


def test_a_steady_process_keeps_its_description_object_and_a_changed_one_is_new():
    info = ProcessInfo(pid=42, start_time=1.0, user="alice", cmdline=("python", "train.py"))
    moved = ProcessInfo(pid=42, start_time=1.0, user="alice", cmdline=("python", "eval.py"))

    def wire(i, used):
        gpu = GpuSample(index=0, processes=(GpuProcess(pid=42, used=used, info=i),))
        return json.loads(json.dumps(frame_to_wire(Frame(time=used, gpus=(gpu,)))))

    decoder = FrameDecoder()
    first = decoder.decode(wire(info, 1)).gpus[0].processes[0]
    second = decoder.decode(wire(info, 2)).gpus[0].processes[0]
    assert second.used == 2 and second.info is first.info  # decoded once
    third = decoder.decode(wire(moved, 3)).gpus[0].processes[0]
    assert third.info == moved and third.info is not first.info
    assert frame_from_wire(wire(info, 4)).gpus[0].processes[0].info is not first.info  # no decoder
    again = decoder.decode(wire(moved, 3)).gpus[0].processes[0]
    assert again is third  # a quiet process: nothing built


def test_a_stream_decoder_refuses_garbage_as_plainly_as_the_codec():
    decoder = FrameDecoder()
    with pytest.raises(ValueError):
        decoder.decode({"gpus": [{"index": 0, "processes": [{"pid": [1], "used": {}}]}]})
    good = Frame(time=1.0, gpus=(GpuSample(index=0, processes=(GpuProcess(pid=7, used=5),)),))
    assert decoder.decode(frame_to_wire(good)) == good  # and goes on


def test_a_newer_remote_s_extra_fields_are_ignored_and_missing_ones_default():
    wire = frame_to_wire(Frame(time=5.0, gpus=(GpuSample(index=0, used=7),)))
    wire["gpus"][0]["fan_speed"] = 40  # a field this version does not know
    wire["gpus"][0].pop("total", None)  # not written: it holds its default
    back = frame_from_wire(wire)
    assert back.gpus[0].used == 7 and back.gpus[0].total is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
)


@given(json_values)
def test_garbage_in_a_frame_message_is_a_value_error_never_a_crash(junk):
    try:
        frame_from_wire(junk if isinstance(junk, dict) else {"gpus": junk})
    except ValueError:
        pass
