"""A runtime's API on a Unix socket, for tests: ``serve(path, answer)`` answers each
GET with ``answer(request path) -> (status, body bytes)``, records the paths asked
and can answer slowly (``delay``); ``close()`` stops it."""

from __future__ import annotations

import http.server
import socketserver
import threading
import time


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class UnixHttp:
    def __init__(self, path: str, answer, delay: float = 0.0):
        self.path, self.asked = path, []
        asked = self.asked

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                asked.append(self.path)
                time.sleep(delay)
                status, body = answer(self.path)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = _UnixHTTPServer(path, Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
