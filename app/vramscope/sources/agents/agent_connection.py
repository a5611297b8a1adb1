"""Connections to agent sockets (the monitor's side), bounded in time, bytes and depth.

Every byte the monitor reads from an agent socket comes through here. An
agent socket may belong to another user (a container's runtime directory
seen through /proc/PID/root) or be anything at all in a directory the
monitor scans, so:

- only a socket is connected to: the name is opened ``O_PATH|O_NOFOLLOW``
  and ``fstat``\\ed first (a symlink or FIFO there is never connected to),
  and the process that accepts must be the directory's owner (``SO_PEERCRED``)
  before a byte is sent -- a name swapped meanwhile for a link to some other
  service's socket gets nothing;
- sockets are non-blocking: a connect to a full backlog fails at once;
- every wait is bounded by a deadline the caller gives -- one deadline for
  all agents of a pass (``exchange`` sends the requests of many agents at
  once and waits for their replies together), so 50 sockets that accept and
  never answer cost a pass its budget, not 50 timeouts;
- frames are the agent's own (vramscope/agent/protocol/framing.py: length-prefixed,
  at most ``MAX_FRAME`` bytes, JSON nesting bounded); a reply in a protocol
  version this monitor does not speak becomes ``VersionRefused`` with the
  text the window and `status` show; any other broken frame (over the size
  limit, nested too deep, not JSON) ``RefusedReply`` -- both ConnectionErrors,
  so each command says them in one line.
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import stat
import time

from vramscope.agent import protocol
from vramscope.agent.serving.server import peer_uid
from vramscope.core.safe_io.bounded_read import describe_mode

READ_CHUNK = 1 << 16


def mismatch_text(agent_versions, monitor_version: int = protocol.PROTOCOL_VERSION) -> str:
    """What the monitor shows when it and an agent share no protocol version."""
    return (
        f"protocol version mismatch: the agent speaks {agent_versions}, this monitor "
        f"{monitor_version}; run the same vramscope version on both sides"
    )


class VersionRefused(ConnectionError):
    """The agent and this monitor share no protocol version."""


class RefusedReply(ConnectionError):
    """The agent broke the framing or sent a reply over the size or nesting limits
    (``protocol.MAX_FRAME``, ``json_limits.MAX_DEPTH``): the connection is closed."""


class NotASocket(ConnectionError):
    """The name is not a socket (a symlink, a FIFO, a file): never connected to."""


def _connect(sock: socket.socket, path: str) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotASocket(f"{path} is a symlink; not connected to") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if not stat.S_ISSOCK(mode):
        raise NotASocket(f"{path} is {describe_mode(mode)}, not a socket; not connected to")
    sock.connect(path)


class AgentConnection:
    """One non-blocking connection to one agent socket."""

    def __init__(self, path: str, owner: int | None = None):
        """``owner``: the uid that must be listening (the directory's owner): a name
        swapped for a link to some other service's socket is refused before a byte
        is sent."""
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.setblocking(False)
            _connect(self.sock, path)
            if owner is not None and (uid := peer_uid(self.sock)) not in (owner, None):
                raise NotASocket(
                    f"{path} is served by uid {uid}, not by the directory's owner ({owner}); not used"
                )
        except BlockingIOError:
            self.sock.close()
            raise TimeoutError("the agent's socket is not accepting connections (backlog full)") from None
        except OSError:
            self.sock.close()
            raise
        self.reader = protocol.FrameReader()

    def send(self, obj: dict) -> None:
        data = protocol.encode(obj)
        try:
            sent = self.sock.send(data)
        except BlockingIOError:
            sent = 0
        if sent != len(data):  # a request is a few dozen bytes: a full buffer is a stuck agent
            raise TimeoutError("the agent does not read its socket")

    def receive(self) -> dict | None:
        """A reply when one has arrived whole, else None; raises when the agent closed
        the connection or broke the framing."""
        try:
            data = self.sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return None
        if not data:
            raise ConnectionError("agent closed the connection")
        try:
            messages = self.reader.feed(data)
        except protocol.VersionMismatch as exc:
            raise VersionRefused(mismatch_text(exc.version)) from None
        except protocol.ProtocolError as exc:
            raise RefusedReply(f"the agent's reply is refused: {exc}"[:300]) from None
        return messages[0] if messages else None

    def request(self, obj: dict, deadline: float) -> dict:
        result = exchange([(self, obj)], deadline)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def exchange(requests: list[tuple[AgentConnection, dict]], deadline: float, clock=time.monotonic) -> list:
    """Send every request, then wait for all replies together until ``deadline``
    (monotonic). One result per request, in order: the reply (a dict), or the
    exception for that agent (TimeoutError past the deadline)."""
    results: list = [None] * len(requests)
    waiting: dict[int, int] = {}
    with selectors.DefaultSelector() as sel:
        for n, (conn, obj) in enumerate(requests):
            try:
                conn.send(obj)
                sel.register(conn.sock, selectors.EVENT_READ, n)
                waiting[n] = 1
            except Exception as exc:  # noqa: BLE001 - that agent's problem only
                results[n] = exc
        while waiting:
            left = deadline - clock()
            if left <= 0:
                break
            for key, _ in sel.select(left):
                n = key.data
                try:
                    reply = requests[n][0].receive()
                except Exception as exc:  # noqa: BLE001
                    reply = exc
                if reply is not None:
                    results[n] = reply
                    sel.unregister(key.fileobj)
                    del waiting[n]
    for n in waiting:
        results[n] = TimeoutError("agent reply too slow (the pass's time for agents ran out)")
    return results
