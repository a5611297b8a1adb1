"""One blocking-with-timeout connection to one agent socket (the monitor's side).

The frames are the agent's own (vramscope/agent/protocol.py: length-prefixed,
versioned, size-limited); a reply in a protocol version this monitor does not
speak becomes ``VersionRefused`` with the text the window and `status` show.
"""

from __future__ import annotations

import socket
import time

from vramscope.agent import protocol


class VersionRefused(ConnectionError):
    """The agent and this monitor share no protocol version."""


class AgentConnection:
    """One blocking-with-timeout connection to one agent socket."""

    def __init__(self, path: str, timeout: float = 0.5):
        self.path = path
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.reader = protocol.FrameReader()

    def request(self, obj: dict) -> dict:
        self.sock.sendall(protocol.encode(obj))
        deadline = time.monotonic() + max(self.timeout * 4, 1.0)
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError("agent reply too slow")
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("agent closed the connection")
            try:
                messages = self.reader.feed(data)
            except protocol.VersionMismatch as exc:
                raise VersionRefused(protocol.mismatch_text(exc.version)) from None
            if messages:
                return messages[0]

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
