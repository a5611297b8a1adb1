"""The wire protocol: frames round-trip, garbage is refused cleanly, a huge
length prefix is refused before anything is buffered."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vramscope.agent import protocol
from vramscope.agent.protocol import FrameReader, ProtocolError

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
messages = st.dictionaries(st.text(max_size=10), json_values, max_size=6)


@pytest.mark.slow
@given(st.lists(messages, min_size=1, max_size=5), st.data())
@settings(max_examples=150, deadline=None)
def test_frames_survive_any_chunking(msgs, data):
    stream = b"".join(protocol.encode(m) for m in msgs)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    reader = FrameReader()
    got = []
    prev = 0
    for c in cuts + [len(stream)]:
        got += reader.feed(stream[prev:c])
        prev = c
    assert got == msgs
    assert reader.pending == 0


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_arbitrary_bytes_give_messages_or_a_protocol_error_never_anything_else(blob):
    reader = FrameReader()
    try:
        out = reader.feed(blob)
    except protocol.VersionMismatch as exc:  # a whole frame of another version: answerable
        assert exc.version not in protocol.SUPPORTED_VERSIONS and reader.version == exc.version
        return
    except ProtocolError:
        with pytest.raises(ProtocolError):  # the stream stays failed: the caller must close
            reader.feed(b"")
        return
    assert all(isinstance(m, dict) for m in out)


@given(st.integers(protocol.MAX_FRAME + 1, 2**32 - 1))
def test_huge_length_prefix_is_refused_from_the_header_alone(length):
    header = struct.pack(">2sBBI", b"VS", protocol.PROTOCOL_VERSION, 0, length)
    with pytest.raises(ProtocolError, match="exceeds"):
        FrameReader().feed(header)


def test_wrong_magic_fails_on_the_first_bytes():
    with pytest.raises(ProtocolError, match="magic"):
        FrameReader().feed(b"GET / HTTP/1.1\r\n")
    with pytest.raises(ProtocolError, match="magic"):
        FrameReader().feed(b"X")  # even before a whole header arrived


def test_unknown_version_and_flags_are_refused():
    payload = b"{}"
    with pytest.raises(ProtocolError, match="version 9"):
        protocol.decode(struct.pack(">2sBBI", b"VS", 9, 0, 2) + payload)
    with pytest.raises(ProtocolError, match="flags"):
        protocol.decode(struct.pack(">2sBBI", b"VS", 1, 4, 2) + payload)


@pytest.mark.parametrize("payload", [b"[1,2]", b"\xff\xfe", b"{not json", b"", b"NaN"])
def test_payload_must_be_a_json_object(payload):
    with pytest.raises(ProtocolError):
        protocol.decode(protocol.HEADER.pack(b"VS", 1, 0, len(payload)) + payload)


def test_encoder_refuses_what_json_cannot_say():
    with pytest.raises(ValueError):
        protocol.encode({"x": float("nan")})
    with pytest.raises(ProtocolError):
        protocol.frame_bytes(b"x" * (protocol.MAX_FRAME + 1))


def test_a_frame_of_another_version_is_read_whole_then_named_and_the_stream_goes_on():
    future = struct.pack(">2sBBI", b"VS", 9, 0, 13) + b'{"op":"hello"}'[:13]
    reader = FrameReader()
    with pytest.raises(protocol.VersionMismatch, match="version 9 not supported") as info:
        reader.feed(future[:5])  # the header alone says nothing yet
        reader.feed(future[5:])
    assert info.value.version == 9 and reader.pending == 0
    assert reader.feed(protocol.encode({"op": "pull"})) == [{"op": "pull"}]
    assert reader.version == protocol.PROTOCOL_VERSION


def test_the_vocabulary_is_plain_strings_on_the_wire():
    from vramscope.agent.protocol import BUCKETS, PHASES, Bucket, ItemKind, Op
    from vramscope.core.agent_figures.agent_keys import series_key

    assert protocol.decode(
        protocol.encode({"op": Op.PULL, "kind": ItemKind.STEP, "phases": {p: 1 for p in PHASES}})
    ) == {"op": "pull", "kind": "step", "phases": {"forward": 1, "backward": 1, "optimizer": 1, "eval": 1}}
    assert list(BUCKETS)[-1] == Bucket.OUTSIDE_PYTORCH == "outside_pytorch"
    assert series_key(7, 1.5, "cuda:0", Bucket.WEIGHTS) == ("agent", 7, 1.5, "cuda:0", "weights")
