"""A stand-in HTTP peer on 127.0.0.1 that answers whatever bytes a test gives
it -- broken HTTP, 10,000 headers, a body trickled a byte at a time -- for the
tests of core/safe_io/bounded_http.py and its users (Prometheus, /metrics, Jupyter)."""

from __future__ import annotations

import socket
import threading
import time


class RawHttp:
    """Accepts connections on 127.0.0.1 (or a Unix socket path) and sends
    ``answer`` to each (after reading its request), ``trickle`` seconds between
    bytes when set (``trickle_after``: bytes sent at full speed first)."""

    def __init__(
        self,
        answer: bytes,
        trickle: float | None = None,
        trickle_after: int = 0,
        unix_path: str | None = None,
    ):
        self.answer, self.trickle, self.trickle_after = answer, trickle, trickle_after
        if unix_path:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(unix_path)
        else:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.closed = threading.Event()
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.requests += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            if self.trickle is None:
                conn.sendall(self.answer)
            else:
                conn.sendall(self.answer[: self.trickle_after])
                for i in range(self.trickle_after, len(self.answer)):
                    if self.closed.is_set():
                        return
                    conn.sendall(self.answer[i : i + 1])
                    time.sleep(self.trickle)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


def http_answer(
    body: bytes, status: str = "200 OK", headers: dict | None = None, length: int | None = None
) -> bytes:
    head = [
        f"HTTP/1.1 {status}",
        f"Content-Length: {len(body) if length is None else length}",
        "Connection: close",
        *(f"{k}: {v}" for k, v in (headers or {}).items()),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body
