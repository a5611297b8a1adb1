"""Settings overrides, command-line thresholds, the store hookup, and the
Jupyter helpers (connection file parsing, notebook lookup on a local server)."""

from __future__ import annotations

import argparse
import http.server
import json
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.detectors import Diagnostics, DiagnosticSettings
from vramscope.core.detectors import jupyter
from vramscope.commands.diagnostic_options import add_diagnostic_arguments
from vramscope.core.detectors.thresholds import threshold_changes
from vramscope.core.store.store import Store
from vramscope.core.units import MiB

from .scenarios import GiB, frame, gpu, proc


def test_overrides_refuse_unknown_and_negative_values():
    s = DiagnosticSettings().with_overrides(idle_minutes=2.0)
    assert s.idle_minutes == 2.0 and DiagnosticSettings().idle_minutes == 5.0
    with pytest.raises(ValueError, match="unknown diagnostic setting"):
        DiagnosticSettings().with_overrides(idle_minuts=2)
    with pytest.raises(ValueError, match="must not be negative"):
        DiagnosticSettings().with_overrides(leak_steps=-1)


def test_command_line_thresholds_reach_the_settings():
    p = argparse.ArgumentParser()
    add_diagnostic_arguments(p)
    args = p.parse_args(
        [
            "--squatter-min-mib",
            "512",
            "--idle-minutes",
            "0.5",
            "--leak-steps",
            "30",
            "--near-oom-free-mib",
            "2048",
            "--watch",
            "10",
        ]
    )
    s = DiagnosticSettings().with_overrides(**threshold_changes(args))
    assert s.squatter_min_bytes == 512 * MiB and s.idle_minutes == 0.5
    assert s.leak_steps == 30 and s.near_oom_free_bytes == 2 * GiB and args.watch == 10.0
    assert threshold_changes(p.parse_args([])) == {}
    with pytest.raises(SystemExit):
        p.parse_args(["--idle-minutes", "-3"])


def test_engine_as_a_store_listener():
    store = Store(fine_points=8, coarse_points=8)
    engine = Diagnostics()
    engine.attach(store)
    store.append(frame(0, [gpu([proc(1, 23 * GiB + 500 * MiB, sm=90)], util=90)]))
    assert engine.version == 1 and [a.kind for a in engine.alerts()] == ["near_oom"]
    engine.detach(store)
    store.append(frame(1, []))
    assert engine.version == 1


@given(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=1,
        max_size=40,
    ).filter(lambda s: not s.startswith("-"))
)
def test_connection_file_forms(path):
    assert jupyter.connection_file(["python", "-m", "ipykernel_launcher", "-f", path]) == path
    assert jupyter.connection_file(["python", "-m", "ipykernel_launcher", f"--f={path}"]) == path
    assert jupyter.connection_file(["ipykernel", f"--KernelApp.connection_file={path}"]) == path


def test_kernel_recognition():
    assert jupyter.is_jupyter_kernel(["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "x"])
    assert jupyter.is_jupyter_kernel(["python", "-m", "ipykernel", "-f", "x"])
    assert jupyter.is_jupyter_kernel(["python", "/opt/colab_kernel_launcher.py"])
    assert not jupyter.is_jupyter_kernel(["python", "train.py", "--resume"])
    assert not jupyter.is_jupyter_kernel(None)
    assert jupyter.kernel_id("/run/user/1000/jupyter/kernel-1a2b-3c4d.json") == "1a2b-3c4d"
    assert jupyter.kernel_id("/tmp/other.json") is None


@pytest.fixture
def jupyter_server(tmp_path):
    """A local HTTP server answering /api/sessions like Jupyter, and its runtime file."""
    seen_tokens = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen_tokens.append(self.headers.get("Authorization"))
            body = json.dumps(
                [{"path": "work/explore.ipynb", "kernel": {"id": "1a2b-3c4d", "name": "python3"}}]
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "jpserver-4242.json").write_text(
        json.dumps({"url": f"http://127.0.0.1:{server.server_port}/", "token": "secret-token"})
    )
    yield runtime, seen_tokens
    server.shutdown()


def test_find_notebook_asks_the_local_server(jupyter_server):
    runtime, tokens = jupyter_server
    hint = jupyter.find_notebook("1a2b-3c4d", [runtime])
    assert hint.notebook == "work/explore.ipynb" and "Jupyter server" in hint.how
    assert tokens == ["token secret-token"]
    other = jupyter.find_notebook("ffff", [runtime])
    assert other.notebook is None and "no running local Jupyter server lists kernel ffff" in other.how


def test_find_notebook_with_no_server_says_how_to_look(tmp_path):
    hint = jupyter.find_notebook("1a2b", [tmp_path])
    assert hint.notebook is None and "jupyter server list" in hint.how


def test_find_notebook_ignores_remote_urls(tmp_path):
    (tmp_path / "jpserver-1.json").write_text(json.dumps({"url": "http://example.com:8888/"}))
    assert jupyter.find_notebook("1a2b", [tmp_path]).notebook is None


def test_kernel_idle_counts_from_its_last_execution_on_the_local_jupyter_server(tmp_path):
    """A fake Jupyter server on 127.0.0.1 says the kernel last ran 12 min ago while SM
    says nothing: the kernel is listed; when it says busy, it is not."""
    import datetime
    import http.server
    import json
    import threading

    from vramscope.core.detectors import Diagnostics, jupyter

    from .scenarios import T0, GiB, frame, gpu, proc

    state = {"busy": False}
    last = datetime.datetime.fromtimestamp(T0 - 12 * 60, datetime.timezone.utc)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            assert self.headers.get("Authorization") == "token secret"
            body = json.dumps(
                {
                    "id": "5d2a",
                    "last_activity": last.isoformat().replace("+00:00", "Z"),
                    "execution_state": "busy" if state["busy"] else "idle",
                }
            ).encode()
            self.send_response(200 if self.path == "/api/kernels/5d2a" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rt = tmp_path / "rt"
        rt.mkdir()
        (rt / "jpserver-1.json").write_text(
            json.dumps({"url": f"http://127.0.0.1:{server.server_port}/", "token": "secret"})
        )
        cmd = ("python", "-m", "ipykernel_launcher", "-f", "/x/kernel-5d2a.json")
        eng = Diagnostics(
            notebook_finder=lambda pid, conn: jupyter.NotebookHint(None, "t"),
            kernel_activity=lambda conn: jupyter.kernel_activity(conn, dirs=[rt]),
        )
        # a busy GPU hides the kernel's own SM: only the server can tell
        [sq] = [
            a
            for a in eng.feed(frame(0, [gpu([proc(3131, 6 * GiB, sm=None, cmd=cmd)], util=80)]))
            if a.kind == "squatter"
        ]
        assert sq.severity == "info" and "idle 12 min" in sq.message
        state["busy"] = True
        alerts = eng.feed(frame(20, [gpu([proc(3131, 6 * GiB, sm=None, cmd=cmd)], util=80)]))
        assert [a for a in alerts if a.kind == "squatter"] == []
    finally:
        server.shutdown()


def test_a_jupyter_server_file_that_is_a_fifo_or_huge_is_passed_over(tmp_path):
    import os
    import time

    os.mkfifo(tmp_path / "jpserver-1.json")  # another program's, or a mistake: never waited on
    (tmp_path / "jpserver-2.json").write_text(json.dumps({"url": "http://127.0.0.1:1/", "pad": "x" * 10**6}))
    start = time.monotonic()
    hint = jupyter.find_notebook("1a2b", [tmp_path])
    assert hint.notebook is None and "jupyter server list" in hint.how
    assert time.monotonic() - start < 5
