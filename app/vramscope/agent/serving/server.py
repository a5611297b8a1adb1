"""The agent's socket: read-only requests over a per-user Unix domain socket.

One non-blocking selector loop, driven by the agent thread (never the
training thread). A slow, silent or hostile peer cannot stall anything: no
call here blocks, a half-sent frame just waits in its own buffer, idle and
stuck connections are closed, and a peer whose uid is neither ours nor root's
(SO_PEERCRED; root may read this process's memory anyway, and a monitor run as
root reaches agents inside containers) is closed at once. Malformed input gets an error reply, then the connection
is closed. Every failure is counted, none is raised to the caller.

What one connection can cost the training process is bounded:

- one read takes at most READ_BYTES and at most MAX_REQUESTS_PER_READ
  pipelined requests (more is an error reply and a close);
- no request is handled once the connection is closing (a peer that never
  reads its replies is closed at MAX_OUTBUF, not served further);
- each connection has a token bucket (RATE_PER_SECOND, RATE_BURST): past
  it, an error reply and a close;
- a connection silent for IDLE_TIMEOUT seconds is dropped, and when all
  MAX_CONNECTIONS are taken the one idle longest makes room for a new one,
  so idle peers cannot lock the monitor out.

Requests (JSON objects with "op"):
- ``hello``  -> identity (pid, start time, hostname, pid namespace, ranks),
  protocol version, agent settings;
- ``pull`` {"cursor": n, "max_bytes": m} -> items after the cursor, the new
  cursor, ``dropped`` (something newer than the cursor was evicted) and
  ``more`` (pull again at once);
- ``status`` -> the agent's own counters.
"""

from __future__ import annotations

import os
import selectors
import socket
import struct
import time

from vramscope.agent import protocol

MAX_CONNECTIONS = 16
IDLE_TIMEOUT = 5.0  # seconds without a request (the monitor reconnects when it pulls again)
EVICT_IDLE_AFTER = 1.0  # when full, a connection idle this long makes room for a new one
PARTIAL_TIMEOUT = 5.0  # seconds a half-received frame may sit
MAX_OUTBUF = 2 * protocol.MAX_FRAME
READ_BYTES = 65536  # per read
MAX_REQUESTS_PER_READ = 8  # pipelined requests in one read
RATE_PER_SECOND = 20.0  # requests per second per connection, sustained
RATE_BURST = 40.0  # requests allowed at once (a monitor catching up pulls several times)
MAX_UNIX_PATH = 107


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux SO_PEERCRED); None if unknown."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        return uid
    except OSError:
        return None


class _Conn:
    __slots__ = ("sock", "reader", "out", "last", "partial_since", "closing", "closed", "tokens", "refilled")

    def __init__(self, sock, now: float):
        self.sock = sock
        self.reader = protocol.FrameReader()
        self.out = bytearray()
        self.last = now
        self.partial_since: float | None = None
        self.closing = False  # the last reply is queued; nothing more is handled
        self.closed = False
        self.tokens = RATE_BURST
        self.refilled = now

    def take_token(self, now: float) -> bool:
        self.tokens = min(RATE_BURST, self.tokens + (now - self.refilled) * RATE_PER_SECOND)
        self.refilled = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class AgentServer:
    def __init__(self, path: str, handler, clock=time.monotonic):
        if len(path.encode()) > MAX_UNIX_PATH:
            raise OSError(
                f"the socket path {path} is {len(path.encode())} bytes, longer than a Unix "
                f"socket allows ({MAX_UNIX_PATH}); set VRAMSCOPE_RUNTIME_DIR to a shorter "
                "directory"
            )
        self.path = path
        self.handler = handler  # request dict -> reply bytes (an encoded JSON payload)
        self.peer_uid = peer_uid  # replaceable in tests (simulate another user's peer)
        self._clock = clock
        self._sel = selectors.DefaultSelector()
        self._conns: dict[int, _Conn] = {}
        self.counters = {
            "accepted": 0,
            "rejected_uid": 0,
            "rejected_full": 0,
            "bad_frames": 0,
            "requests": 0,
            "errors": 0,
            "closed_idle": 0,
            "evicted_idle": 0,
            "rate_limited": 0,
            "too_many_pipelined": 0,
            "unread_replies": 0,
        }
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if os.path.lexists(path):
                os.unlink(path)  # our own name (pid + start time): a leftover of ours
            self._listener.bind(path)
            os.chmod(path, 0o600)
            self._listener.listen(MAX_CONNECTIONS + 8)
            self._listener.setblocking(False)
        except OSError:
            self._listener.close()
            raise
        self._sel.register(self._listener, selectors.EVENT_READ, None)

    @property
    def connections(self) -> int:
        return len(self._conns)

    def poll(self, timeout: float) -> None:
        """Serve whatever is ready, waiting at most ``timeout`` seconds."""
        try:
            events = self._sel.select(max(0.0, timeout))
        except (OSError, ValueError):
            self.counters["errors"] += 1
            time.sleep(min(timeout, 0.05))
            return
        for key, mask in events:
            try:
                if key.data is None:
                    self._accept()
                else:
                    self._service(key.data, mask)
            except Exception:
                self.counters["errors"] += 1
                if key.data is not None:
                    self._close(key.data)
        self._reap()

    def _accept(self) -> None:
        for _ in range(8):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            uid = self.peer_uid(sock)
            if uid is None or uid not in (os.getuid(), 0):
                self.counters["rejected_uid"] += 1
                sock.close()
                continue
            if len(self._conns) >= MAX_CONNECTIONS and not self._evict_idlest():
                self.counters["rejected_full"] += 1
                sock.close()
                continue
            sock.setblocking(False)
            conn = _Conn(sock, self._clock())
            self._conns[id(conn)] = conn
            self._sel.register(sock, selectors.EVENT_READ, conn)
            self.counters["accepted"] += 1

    def _evict_idlest(self) -> bool:
        """Close the connection idle the longest, if idle long enough; True if one went."""
        now = self._clock()
        idlest = min(self._conns.values(), key=lambda c: c.last, default=None)
        if idlest is None or now - idlest.last < EVICT_IDLE_AFTER:
            return False
        self.counters["evicted_idle"] += 1
        self._close(idlest)
        return True

    def _refuse(self, conn: _Conn, counter: str, message: str) -> None:
        """An error reply, then close: nothing more is handled on this connection."""
        self.counters[counter] += 1
        self._queue(conn, protocol.encode_payload({"ok": False, "error": message}))
        conn.closing = True

    def _service(self, conn: _Conn, mask: int) -> None:
        if mask & selectors.EVENT_READ and not conn.closing:
            try:
                data = conn.sock.recv(READ_BYTES)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                self._close(conn)
                return
            if data == b"":
                self._close(conn)
                return
            if data:
                conn.last = self._clock()
                try:
                    requests = conn.reader.feed(data)
                except protocol.VersionMismatch as exc:  # answered in the client's version
                    self.counters["bad_frames"] += 1
                    self._queue(
                        conn, protocol.encode_payload(protocol.version_error(exc.version)), exc.version
                    )
                    conn.closing = True
                    requests = []
                except protocol.ProtocolError as exc:
                    self._refuse(conn, "bad_frames", str(exc))
                    requests = []
                if len(requests) > MAX_REQUESTS_PER_READ:
                    self._refuse(
                        conn,
                        "too_many_pipelined",
                        f"{len(requests)} requests in one read; at most "
                        f"{MAX_REQUESTS_PER_READ} (send one, read its reply)",
                    )
                    requests = []
                for request in requests:
                    if conn.closing or conn.closed:  # decided to close: no more work
                        break
                    if not conn.take_token(self._clock()):
                        self._refuse(
                            conn, "rate_limited", f"more than {RATE_PER_SECOND:g} requests per second"
                        )
                        break
                    self.counters["requests"] += 1
                    try:
                        reply = self.handler(request)
                    except Exception as exc:  # a handler bug must not kill the agent
                        self.counters["errors"] += 1
                        reply = protocol.encode_payload({"ok": False, "error": f"agent error: {exc}"})
                    self._queue(conn, reply, conn.reader.version)
                conn.partial_since = self._clock() if conn.reader.pending else None
        if conn.closed:
            return
        if conn.out:
            self._flush(conn)
        elif conn.closing:
            self._close(conn)

    def _queue(self, conn: _Conn, payload: bytes, version: int = protocol.PROTOCOL_VERSION) -> None:
        try:
            conn.out += protocol.frame_bytes(payload, version)
        except protocol.ProtocolError as exc:
            conn.out += protocol.encode({"ok": False, "error": str(exc)})
        if len(conn.out) > MAX_OUTBUF:  # the peer does not read its replies
            self.counters["unread_replies"] += 1
            self._close(conn)
            return
        try:
            self._sel.modify(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)
        except (KeyError, ValueError, OSError):
            pass

    def _flush(self, conn: _Conn) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        del conn.out[:sent]
        if not conn.out:
            if conn.closing:
                self._close(conn)
                return
            try:
                self._sel.modify(conn.sock, selectors.EVENT_READ, conn)
            except (KeyError, ValueError, OSError):
                pass

    def _reap(self) -> None:
        now = self._clock()
        for conn in list(self._conns.values()):
            if now - conn.last > IDLE_TIMEOUT or (
                conn.partial_since is not None and now - conn.partial_since > PARTIAL_TIMEOUT
            ):
                self.counters["closed_idle"] += 1
                self._close(conn)

    def _close(self, conn: _Conn) -> None:
        conn.closed = conn.closing = True
        conn.out = bytearray()  # its replies are no longer anyone's
        try:
            self._sel.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        self._conns.pop(id(conn), None)
        try:
            conn.sock.close()
        except OSError:
            pass

    def drop_inherited(self) -> None:
        """In a forked child: close this process's copies of the listener, the connections
        and the selector -- no shutdown, no epoll change, no unlink (the parent's socket is
        untouched). A forked helper that outlives the agent's process then holds no
        listener, so the socket of a dead process is seen as stale (paths.remove_stale)."""
        # (closing the epoll object leaves the parent's registrations as they are)
        for closable in [c.sock for c in self._conns.values()] + [self._listener, self._sel]:
            try:
                closable.close()
            except (OSError, ValueError):
                pass
        self._conns = {}

    def close(self) -> None:
        for conn in list(self._conns.values()):
            self._close(conn)
        try:
            self._sel.unregister(self._listener)
        except (KeyError, ValueError, OSError):
            pass
        self._listener.close()
        self._sel.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
