"""A stand-in for the Hugging Face Hub on 127.0.0.1 (HF_ENDPOINT points at it):
the resolve endpoint huggingface_hub's hf_hub_download and
get_safetensors_metadata use, with the headers they read (ETag,
X-Repo-Commit, X-Error-Code) and HTTP range requests. Tests never reach the
real Hub."""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A .safetensors file's 8-byte length and JSON header (the data is never read)."""
    header, offset = {}, 0
    sizes = {"F32": 4, "BF16": 2, "F16": 2, "U8": 1}
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    body = json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body


class StandInHub:
    def __init__(self):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.gated: set[str] = set()
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_a):
                pass

            def _answer(self, with_body: bool):
                hub.requests.append(f"{self.command} {self.path}")
                parts = self.path.split("?")[0].strip("/").split("/resolve/")
                if len(parts) != 2:
                    return self._error(404, "RepoNotFound", with_body)
                repo, rest = parts
                filename = rest.split("/", 1)[1] if "/" in rest else ""
                if repo in hub.gated:
                    return self._error(403, "GatedRepo", with_body)
                files = hub.repos.get(repo)
                if files is None:
                    return self._error(404, "RepoNotFound", with_body)
                if filename not in files:
                    return self._error(404, "EntryNotFound", with_body)
                data = files[filename]
                status, chunk = 200, data
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes="):
                    lo, _, hi = rng[6:].partition("-")
                    lo, hi = int(lo), int(hi) if hi else len(data) - 1
                    chunk, status = data[lo : hi + 1], 206
                self.send_response(status)
                self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("Content-Length", str(len(chunk)))
                self.end_headers()
                if with_body:
                    self.wfile.write(chunk)

            def _error(self, code, error_code, with_body):
                body = json.dumps({"error": error_code}).encode()
                self.send_response(code)
                self.send_header("X-Error-Code", error_code)
                self.send_header("X-Error-Message", error_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def do_HEAD(self):
                self._answer(False)

            def do_GET(self):
                self._answer(True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
