"""Framing of the `vramscope stream` protocol (defined here once).

One message per line: a UTF-8 JSON object followed by ``\\n`` (newline-
delimited JSON, https://github.com/ndjson/ndjson-spec), at most
``MAX_LINE`` bytes. The remote side starts with a hello naming the protocol
and its version; every later line is one message whose ``type`` is one of
the names below. A stream is text only, so ssh, ProxyJump or ``tee`` can
carry and log it unchanged.

Lines before the hello that are not a hello (a login banner or a shell
start-up file printing to stdout) are skipped, up to ``MAX_NOISE_LINES``.
After the hello, a line that is not a JSON object is counted and skipped;
an over-long line is discarded whole (up to its newline); an unterminated
line at the end of the stream (a peer that died mid-write) is dropped.

    remote -> monitor:  hello, devices, frame, delta, result, error
    monitor -> remote:  act            (a process action, answered by a result)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypeGuard

from vramscope.agent import json_limits

STREAM_NAME = "vramscope"
# 2: deltas between whole frames (core/stream/deltas.py); 3: a delta's agents apart,
# changed fields only (core/stream/agent_deltas.py); 4: a process as one flat object
# of atoms (core/stream/flat_processes.py)
STREAM_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)  # versions 1 (whole frames only) to 3 are read as well
MAX_LINE = 8 * 1024 * 1024  # bytes; a frame of 8 GPUs x 100 processes is ~100 KB
MAX_NOISE_LINES = 200

# message types
HELLO = "hello"
FRAME = "frame"
# the GPUs' own figures before the first frame, their processes not read yet (sent
# when asked: `stream --devices-first`; core/stream/first_look.py). A reader that does
# not know it skips it, as any unknown type: the first frame still follows whole.
DEVICES = "devices"
DELTA = "delta"
RESULT = "result"
ERROR = "error"
ACT = "act"  # request: a core/end_process/actions.py call on the remote (same checks as locally)
ACT_OPS = ("describe", "is_alive", "kill_allowed_in", "terminate", "kill")
# request: new alert thresholds and/or interval for a running stream (the window's own
# sampler process, when its settings dialog changes them: no restart, the session goes on)
SETTINGS = "settings"

TYPE = "type"
# a message, or a value within one, as a JSON object (its values checked where they are read)
Wire = dict[str, object]
# a whole frame's fields the deltas send apart (core/stream/deltas.py)
GPUS, PROCESSES, TIME = "gpus", "processes", "time"


class StreamError(Exception):
    """The stream cannot go on (bad hello, another protocol version, too much noise)."""


class VersionMismatch(StreamError):
    pass


def encode(message: Mapping[str, object]) -> bytes:
    """One message as its line (compact JSON, non-ASCII kept as \\u escapes)."""
    line = json.dumps(message, separators=(",", ":"), allow_nan=False, default=str)
    data = line.encode("ascii") + b"\n"
    if len(data) > MAX_LINE:
        raise ValueError(f"message of {len(data)} bytes exceeds the stream's {MAX_LINE}-byte limit")
    return data


def hello(host: str | None, app_version: str, interval: float) -> Wire:
    return {
        TYPE: HELLO,
        "stream": STREAM_NAME,
        "version": STREAM_VERSION,
        "vramscope": app_version,
        "host": host,
        "interval": interval,
    }


def check_hello(message: Wire) -> Wire:
    """The hello if this side can read the stream, else VersionMismatch."""
    version = message.get("version")
    if version not in READABLE_VERSIONS:
        raise VersionMismatch(
            f"the remote vramscope {message.get('vramscope') or '?'} speaks stream version "
            f"{version}, this one reads versions {', '.join(map(str, READABLE_VERSIONS))}: "
            "install the same vramscope version on both machines"
        )
    return message


def is_hello(message: object) -> TypeGuard[Wire]:
    return isinstance(message, dict) and message.get(TYPE) == HELLO and message.get("stream") == STREAM_NAME


class LineDecoder:
    """Bytes in (any chunking), messages out. Never raises for malformed input
    after the hello; raises StreamError before it when the start is not a
    vramscope stream (too much noise) or speaks another version."""

    def __init__(self, max_line: int = MAX_LINE, max_noise: int = MAX_NOISE_LINES):
        self.max_line = max_line
        self.max_noise = max_noise
        self._buf = bytearray()
        self._discarding = False  # inside an over-long line: drop up to its newline
        self.hello: Wire | None = None
        self.noise_lines = 0
        self.bad_lines = 0

    def feed(self, data: bytes) -> list[Wire]:
        out: list[Wire] = []
        self._buf += data
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > self.max_line:  # no newline within the limit
                    self._buf.clear()
                    if not self._discarding:
                        self._bad()
                    self._discarding = True
                return out
            line = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            if self._discarding:
                self._discarding = False
                continue
            if len(line) + 1 > self.max_line:
                self._bad()
                continue
            message = self._parse(line)
            if self.hello is None:
                if is_hello(message):
                    self.hello = check_hello(message)
                    out.append(message)
                else:
                    self.noise_lines += 1
                    if self.noise_lines > self.max_noise:
                        raise StreamError(
                            "the remote command did not start a vramscope stream "
                            f"(more than {self.max_noise} other lines on its output)"
                        )
                continue
            if isinstance(message, dict) and isinstance(message.get(TYPE), str):
                out.append(message)
            else:
                self.bad_lines += 1

    def _bad(self) -> None:
        if self.hello is None:
            self.noise_lines += 1
            if self.noise_lines > self.max_noise:
                raise StreamError("the remote command did not start a vramscope stream")
        else:
            self.bad_lines += 1

    @staticmethod
    def _parse(line: bytes) -> object:
        try:
            return json_limits.loads(line)  # bad UTF-8, bad JSON and deep nesting alike
        except ValueError:
            return None

    @property
    def pending(self) -> int:
        """Bytes of an unterminated last line (dropped if the stream ends here)."""
        return len(self._buf)
