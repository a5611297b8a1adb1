"""The agent's wire protocol, shared by the agent and the monitor's client.

One frame = an 8-byte header + a JSON object (UTF-8):

    offset  size  field
    0       2     magic b"VS"
    2       1     protocol version (PROTOCOL_VERSION)
    3       1     flags (0; reserved)
    4       4     payload length, unsigned big-endian, <= MAX_FRAME

Anything else -- wrong magic, an unknown version, non-zero flags, a length
over the limit, a payload that is not a JSON object -- is a ProtocolError.
The reader checks the header before it buffers the payload, so a huge
length prefix costs nothing. Standard library only (runs inside training).
"""

from __future__ import annotations

import json
import struct

MAGIC = b"VS"
PROTOCOL_VERSION = 1
HEADER = struct.Struct(">2sBBI")
HEADER_SIZE = HEADER.size  # 8
MAX_FRAME = 4 * 1024 * 1024  # payload bytes; pull replies are cut to fit

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class ProtocolError(ValueError):
    """The peer sent something that is not a valid frame; close the connection."""


def encode_payload(obj: dict) -> bytes:
    """A JSON object as compact UTF-8 (NaN/inf refused: JSON has no such numbers)."""
    if not isinstance(obj, dict):
        raise TypeError("a frame payload is a JSON object (dict)")
    return _encoder.encode(obj).encode("utf-8")


def frame_bytes(payload: bytes, version: int = PROTOCOL_VERSION) -> bytes:
    """Wrap already-encoded JSON bytes in a frame header."""
    if len(payload) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(payload)} bytes exceeds the {MAX_FRAME}-byte limit")
    return HEADER.pack(MAGIC, version, 0, len(payload)) + payload


def encode(obj: dict) -> bytes:
    return frame_bytes(encode_payload(obj))


def decode_payload(payload: bytes) -> dict:
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"payload is not UTF-8 JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("payload is not a JSON object")
    return obj


def check_header(header: bytes) -> int:
    """Validate an 8-byte header; return the payload length."""
    magic, version, flags, length = HEADER.unpack(header)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic {magic!r} (not a vramscope agent frame)")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version} not supported (this side speaks {PROTOCOL_VERSION})")
    if flags != 0:
        raise ProtocolError(f"unknown flags {flags:#x}")
    if length > MAX_FRAME:
        raise ProtocolError(f"frame length {length} exceeds the {MAX_FRAME}-byte limit")
    return length


def decode(data: bytes) -> dict:
    """Decode exactly one complete frame."""
    if len(data) < HEADER_SIZE:
        raise ProtocolError("truncated frame header")
    length = check_header(data[:HEADER_SIZE])
    if len(data) != HEADER_SIZE + length:
        raise ProtocolError(f"frame says {length} payload bytes, got {len(data) - HEADER_SIZE}")
    return decode_payload(data[HEADER_SIZE:])


class FrameReader:
    """Incremental decoder: feed() whatever bytes arrived, get whole messages.

    After a ProtocolError the reader is poisoned (the stream has lost its
    framing); the connection must be closed.
    """

    __slots__ = ("_buf", "_need", "_broken")

    def __init__(self):
        self._buf = bytearray()
        self._need: int | None = None  # payload length once the header is read
        self._broken = False

    @property
    def pending(self) -> int:
        """Bytes buffered towards an incomplete frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[dict]:
        if self._broken:
            raise ProtocolError("stream already failed")
        self._buf += data
        out: list[dict] = []
        try:
            while True:
                if self._need is None:
                    if len(self._buf) < HEADER_SIZE:
                        # check the magic early so garbage fails fast
                        if self._buf and not MAGIC.startswith(bytes(self._buf[:2])):
                            raise ProtocolError("bad magic (not a vramscope agent frame)")
                        break
                    self._need = check_header(bytes(self._buf[:HEADER_SIZE]))
                    del self._buf[:HEADER_SIZE]
                if len(self._buf) < self._need:
                    break
                payload = bytes(self._buf[: self._need])
                del self._buf[: self._need]
                self._need = None
                out.append(decode_payload(payload))
        except ProtocolError:
            self._broken = True
            self._buf.clear()
            raise
        return out
