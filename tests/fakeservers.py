"""Fake inference servers for the tests: a real process started as
`python -m <module>` (e.g. vllm.entrypoints.openai.api_server, from a package
written to a temporary directory) that serves a Prometheus page on 127.0.0.1
and starts one worker child, as serving engines do."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

VLLM_METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen2.5-7B"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen2.5-7B"} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen2.5-7B"} 0.42
"""
SGLANG_METRICS = """\
# HELP sglang:token_usage The token usage
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B"} 0.17
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B"} 0.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B"} 0.0
"""

SERVER = textwrap.dedent("""
    import http.server, subprocess, sys
    PAGE = open(sys.argv[1]).read().encode()
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(PAGE)
        def log_message(self, *a):
            pass
    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(srv.server_port, worker.pid, flush=True)
    try:
        srv.serve_forever()
    finally:
        worker.kill()
""")


def start_fake_server(tmp_path, module: str, page: str):
    """(process, port, worker pid): ``python -m module`` serving ``page`` at /metrics."""
    pkg = tmp_path / "site"
    path = pkg.joinpath(*module.split("."))
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = module.split(".")[:-1]
    for i in range(len(parts)):  # each package on the way gets an __init__.py
        pkg.joinpath(*parts[: i + 1], "__init__.py").touch()
    path.with_suffix(".py").write_text(SERVER)
    (tmp_path / "page.txt").write_text(page)
    p = subprocess.Popen(
        [sys.executable, "-m", module, str(tmp_path / "page.txt")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=pkg,
        env={"PYTHONPATH": str(pkg), "PATH": "/usr/bin:/bin"},
    )
    port, worker = (int(x) for x in p.stdout.readline().split())
    return p, port, worker


@pytest.fixture
def fake_server(tmp_path):
    procs = []

    def start(module: str, page: str):
        out = start_fake_server(tmp_path / f"s{len(procs)}", module, page)
        procs.append(out[0])
        return out

    yield start
    for p in procs:
        p.terminate()
        p.wait(timeout=10)
