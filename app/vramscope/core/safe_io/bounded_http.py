"""One HTTP GET with every bound in one place: a total deadline (not a
per-read timeout), a byte cap on the body, and http.client's own caps on
the status line, header lines and header count. Every HTTP read vramscope
makes goes through here: Prometheus (``--from-prometheus``), inference
servers' ``/metrics``, Jupyter servers' API and the Docker/Podman API on its
Unix socket. The other side is another user's port or daemon: it may trickle
a byte at a time, send 10,000 headers, a gigabyte of body or no HTTP at all.

``get(url, deadline=..., max_bytes=...)`` returns a ``Reply`` (status,
body bytes) or raises ``HttpError`` with a one-line reason. ``get_json``
also parses the body, refusing nesting past the parser's depth (json's
RecursionError) and NaN/Infinity.

Socket timeouts in Python bound one ``recv``, so a peer sending a byte just
inside each timeout never trips them
(https://docs.python.org/3/library/socket.html#socket-timeouts); here each
read gets only what is left of the request's deadline.
"""

from __future__ import annotations

import dataclasses
import http.client
import io
import socket
import ssl
import time
import urllib.parse

from vramscope.agent import json_limits
from vramscope.core.status.terminal_text import visible

DEFAULT_MAX_BYTES = 4 << 20


class HttpError(Exception):
    """The request failed or the answer broke a bound (one line)."""


class Unreachable(HttpError):
    """No connection (refused, no route, no such socket)."""


@dataclasses.dataclass(frozen=True)
class Reply:
    status: int
    body: bytes


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes, each read bounded by what is left of the deadline."""

    def __init__(self, sock: socket.socket, deadline: float, clock):
        self._sock, self._deadline, self._clock = sock, deadline, clock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self._deadline - self._clock()
        if left <= 0:
            raise TimeoutError("no complete answer within the deadline")
        self._sock.settimeout(left)
        try:
            return self._sock.recv_into(buffer)
        except socket.timeout:
            raise TimeoutError("no complete answer within the deadline") from None


class _DeadlineSocket:
    """What http.client.HTTPResponse needs of a socket (``makefile``), with the deadline."""

    def __init__(self, sock: socket.socket, deadline: float, clock):
        self._sock, self._deadline, self._clock = sock, deadline, clock

    def makefile(self, mode="rb", *args, **kwargs):
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline, self._clock))

    def sendall(self, data) -> None:
        self._sock.settimeout(max(0.001, self._deadline - self._clock()))
        self._sock.sendall(data)

    def close(self) -> None:
        pass  # http.client closes this while the response still reads: get() closes the socket


class _Connection(http.client.HTTPConnection):
    def __init__(
        self,
        host: str,
        port: int | None,
        deadline: float,
        clock,
        *,
        unix_socket: str | None = None,
        tls: bool = False,
    ):
        super().__init__(host, port, timeout=max(0.001, deadline - clock()))
        self._deadline, self._clock = deadline, clock
        self.raw_socket: socket.socket | None = None
        self._unix, self._tls = unix_socket, tls

    def connect(self) -> None:
        left = max(0.001, self._deadline - self._clock())
        if self._unix is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(left)
            try:
                sock.connect(self._unix)
            except OSError:
                sock.close()
                raise
        else:
            sock = socket.create_connection((self.host, self.port), left)
        if self._tls:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        self.raw_socket = sock
        self.sock = _DeadlineSocket(sock, self._deadline, self._clock)


def get(
    url: str,
    *,
    deadline: float,
    max_bytes: int = DEFAULT_MAX_BYTES,
    headers: dict | None = None,
    unix_socket: str | None = None,
    clock=time.monotonic,
) -> Reply:
    """GET ``url`` (over ``unix_socket`` when given: the URL names only the path),
    all of it within ``deadline`` seconds and ``max_bytes`` of body."""
    parts = urllib.parse.urlsplit(url)
    if unix_socket is None and parts.scheme not in ("http", "https"):
        raise HttpError(f"not an http URL: {url[:200]!r}")
    end = clock() + deadline
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn = _Connection(
            parts.hostname or "localhost",
            parts.port,
            end,
            clock,
            unix_socket=unix_socket,
            tls=parts.scheme == "https",
        )
    except ValueError as exc:  # a port that is no number
        raise HttpError(f"not a usable URL: {exc}") from None
    try:
        conn.request("GET", target, headers=headers or {})
        response = conn.getresponse()
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > max_bytes:
            raise HttpError(f"the answer is {int(length):,} bytes, more than the {max_bytes:,} read")
        body = response.read(max_bytes + 1)
        if len(body) > max_bytes:
            raise HttpError(f"the answer is more than the {max_bytes:,} bytes read")
        return Reply(response.status, body)
    except HttpError:
        raise
    except TimeoutError:
        raise HttpError(f"no complete answer within {deadline:g} s") from None
    except http.client.HTTPException as exc:  # malformed, too many headers, cut short
        raise HttpError(
            f"not a valid HTTP answer ({type(exc).__name__}: {visible(str(exc)[:120])})"
        ) from None
    except OSError as exc:
        raise Unreachable(visible(str(getattr(exc, "strerror", None) or exc)[:200])) from None
    finally:
        conn.close()
        if conn.raw_socket is not None:
            conn.raw_socket.close()


def parse_json(body: bytes):
    """A JSON body; ValueError (one line) for bad UTF-8, bad JSON, NaN/Infinity
    or nesting past json_limits' depth."""
    try:
        return json_limits.loads(body, parse_constant=_no_constant, parse_float=_finite)
    except json_limits.TooDeep as exc:
        raise ValueError(str(exc)) from None
    except ValueError as exc:
        raise ValueError(f"not JSON ({str(exc)[:120]})") from None


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is too large a number")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def get_json(url: str, *, deadline: float, max_bytes: int = DEFAULT_MAX_BYTES, **options):
    """(status, parsed JSON body); HttpError for the transport or a body that is no JSON."""
    reply = get(url, deadline=deadline, max_bytes=max_bytes, **options)
    try:
        return reply.status, parse_json(reply.body)
    except ValueError as exc:
        raise HttpError(f"HTTP {reply.status}, {exc}") from None
