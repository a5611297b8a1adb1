"""The frames: an 8-byte header and a JSON object (the layout: agent/protocol/__init__.py),
read incrementally; anything else is a ProtocolError. Standard library only.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping

from vramscope.agent import json_limits

MAGIC = b"VS"
PROTOCOL_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})  # versions this side reads and answers in

HEADER = struct.Struct(">2sBBI")
HEADER_SIZE = HEADER.size  # 8
MAX_FRAME = 4 * 1024 * 1024  # payload bytes; pull replies are cut to fit

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class ProtocolError(ValueError):
    """The peer sent something that is not a valid frame; close the connection."""


class VersionMismatch(ProtocolError):
    """A well-formed frame in a protocol version this side does not speak."""

    def __init__(self, version: int):
        self.version = version
        super().__init__(f"protocol version {version} not supported (this side speaks {describe_versions()})")


def describe_versions() -> str:
    return ", ".join(str(v) for v in sorted(SUPPORTED_VERSIONS))


def version_error(client_version: int) -> dict[str, object]:
    """The agent's answer to a request in a version it does not speak."""
    return {
        "ok": False,
        "error": f"protocol version {client_version} not supported by this agent "
        f"(it speaks {describe_versions()})",
        "protocol": PROTOCOL_VERSION,
        "supported": sorted(SUPPORTED_VERSIONS),
    }


def encode_payload(obj: Mapping[str, object]) -> bytes:
    """A JSON object as compact UTF-8 (NaN/inf refused: JSON has no such numbers)."""
    if not isinstance(obj, dict):
        raise TypeError("a frame payload is a JSON object (dict)")
    return _encoder.encode(obj).encode("utf-8")


def frame_bytes(payload: bytes, version: int = PROTOCOL_VERSION) -> bytes:
    """Wrap already-encoded JSON bytes in a frame header."""
    if len(payload) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(payload)} bytes exceeds the {MAX_FRAME}-byte limit")
    return HEADER.pack(MAGIC, version, 0, len(payload)) + payload


def encode(obj: Mapping[str, object]) -> bytes:
    return frame_bytes(encode_payload(obj))


def decode_payload(payload: bytes) -> dict[str, object]:
    try:
        obj = json_limits.loads(payload)  # nesting bounded: no RecursionError from a peer
    except ValueError as exc:
        raise ProtocolError(f"payload is not UTF-8 JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("payload is not a JSON object")
    return obj


def read_header(header: bytes) -> tuple[int, int]:
    """Validate an 8-byte header's layout; return (version, payload length).
    The version is checked by the caller (see ``check_header``)."""
    magic, version, flags, length = HEADER.unpack(header)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic {magic!r} (not a vramscope agent frame)")
    if flags != 0:
        raise ProtocolError(f"unknown flags {flags:#x}")
    if length > MAX_FRAME:
        raise ProtocolError(f"frame length {length} exceeds the {MAX_FRAME}-byte limit")
    return version, length


def check_header(header: bytes) -> int:
    """Validate an 8-byte header, version included; return the payload length."""
    version, length = read_header(header)
    if version not in SUPPORTED_VERSIONS:
        raise VersionMismatch(version)
    return length


def decode(data: bytes) -> dict[str, object]:
    """Decode exactly one complete frame."""
    if len(data) < HEADER_SIZE:
        raise ProtocolError("truncated frame header")
    length = check_header(data[:HEADER_SIZE])
    if len(data) != HEADER_SIZE + length:
        raise ProtocolError(f"frame says {length} payload bytes, got {len(data) - HEADER_SIZE}")
    return decode_payload(data[HEADER_SIZE:])


class FrameReader:
    """Incremental decoder: feed() whatever bytes arrived, get whole messages.

    After any other ProtocolError the reader is poisoned (the stream has
    lost its framing); the connection must be closed.

    A frame in a version this side does not speak is read whole first, so
    the stream stays in step, then raises ``VersionMismatch`` (the reader is
    not poisoned by it: ``version`` says what the peer speaks and an answer in
    that version can follow).
    """

    __slots__ = ("_buf", "_need", "_broken", "_version", "version")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._need: int | None = None  # payload length once the header is read
        self._version = PROTOCOL_VERSION  # of the frame being read
        self._broken = False
        self.version = PROTOCOL_VERSION  # of the last complete frame the peer sent

    @property
    def pending(self) -> int:
        """Bytes buffered towards an incomplete frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[dict[str, object]]:
        if self._broken:
            raise ProtocolError("stream already failed")
        self._buf += data
        out: list[dict[str, object]] = []
        try:
            while True:
                if self._need is None:
                    if len(self._buf) < HEADER_SIZE:
                        # check the magic early so garbage fails fast
                        if self._buf and not MAGIC.startswith(bytes(self._buf[:2])):
                            raise ProtocolError("bad magic (not a vramscope agent frame)")
                        break
                    self._version, self._need = read_header(bytes(self._buf[:HEADER_SIZE]))
                    del self._buf[:HEADER_SIZE]
                if len(self._buf) < self._need:
                    break
                payload = bytes(self._buf[: self._need])
                del self._buf[: self._need]
                self._need = None
                self.version = self._version
                if self._version not in SUPPORTED_VERSIONS:
                    raise VersionMismatch(self._version)
                out.append(decode_payload(payload))
        except VersionMismatch:
            raise
        except ProtocolError:
            self._broken = True
            self._buf.clear()
            raise
        return out
