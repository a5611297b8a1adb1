"""Jupyter kernels' activity comes on the frame: the enricher asks the local Jupyter
server off the sampling thread, the squatter rule reads the frame -- idle from the
kernel's last execution, the notebook named -- and a slow server never holds a pass."""

from __future__ import annotations

import datetime
import http.server
import json
import threading
import time

import pytest

from vramscope.core.detectors import Diagnostics, jupyter
from vramscope.core.detectors.alert import AlertKind
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.sources.machine.jupyter_kernels import JupyterEnricher

GiB = 1 << 30
T0 = 1_700_000_000.0
KID = "5d2a"
CMD = ("python", "-m", "ipykernel_launcher", "-f", f"/run/user/1000/jupyter/kernel-{KID}.json")


def kernel_frame(t: float) -> Frame:
    info = ProcessInfo(
        pid=3131,
        start_time=T0 - 3600,
        user="alice",
        name="python",
        cmdline=CMD,
        ppid=1000,
        status="sleeping",
        visibility="ok",
        parent_alive=True,
    )
    proc = GpuProcess(pid=3131, used=6 * GiB, sm=None, info=info)
    # a busy GPU hides the kernel's own SM: only its server can tell
    gpu = GpuSample(
        index=0,
        name="Fake RTX 4090",
        uuid="GPU-0",
        total=24 * GiB,
        used=7 * GiB,
        free=17 * GiB,
        util_gpu=80,
        processes=(proc,),
    )
    return Frame(time=T0 + t, gpus=(gpu,), source="nvml")


@pytest.fixture
def jupyter_server(tmp_path):
    """A local Jupyter server (its runtime file in a runtime dir of its own): kernel KID
    last ran 12 minutes before T0, in analysis.ipynb; ``state`` steers its answers."""
    state = {"busy": False, "delay": 0.0}
    last = datetime.datetime.fromtimestamp(T0 - 12 * 60, datetime.timezone.utc)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(state["delay"])
            if self.path == f"/api/kernels/{KID}":
                body = {
                    "id": KID,
                    "last_activity": last.isoformat().replace("+00:00", "Z"),
                    "execution_state": "busy" if state["busy"] else "idle",
                }
            elif self.path == "/api/sessions":
                body = [{"path": "work/analysis.ipynb", "kernel": {"id": KID}}]
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rt = tmp_path / "rt"
    rt.mkdir()
    (rt / "jpserver-1.json").write_text(json.dumps({"url": f"http://127.0.0.1:{server.server_port}/"}))
    state["enricher"] = JupyterEnricher(
        activity=lambda conn: jupyter.kernel_activity(conn, dirs=[rt], timeout=5.0),
        finder=lambda pid, conn: jupyter.find_notebook(jupyter.kernel_id(conn), [rt], timeout=5.0),
        period=0.0,
        first_wait=0.0,
    )
    yield state
    state["enricher"].close()
    server.shutdown()


def test_kernel_activity_arrives_on_the_frame_and_the_rule_reads_it(jupyter_server):
    enrich = jupyter_server["enricher"]
    assert enrich(kernel_frame(0)).kernels == ()  # asked, not waited for
    enrich.wait_idle()
    [k] = enrich(kernel_frame(1)).kernels
    assert (k.pid, k.busy, k.notebook) == (3131, False, "work/analysis.ipynb")
    assert k.last_activity == pytest.approx(T0 - 12 * 60)

    engine = Diagnostics()  # no lookups of its own: the frame says
    [sq] = [a for a in engine.feed(enrich(kernel_frame(2))) if a.kind == AlertKind.SQUATTER]
    assert "idle 12 min" in sq.message
    assert any("notebook: work/analysis.ipynb" in line for line in sq.evidence)

    jupyter_server["busy"] = True  # it runs a cell now: no squatter
    enrich.wait_idle()
    enrich(kernel_frame(3))
    enrich.wait_idle()
    assert [a for a in engine.feed(enrich(kernel_frame(4))) if a.kind == AlertKind.SQUATTER] == []


def test_the_first_pass_waits_briefly_so_a_one_shot_status_has_the_answer(jupyter_server):
    enrich = jupyter_server["enricher"]
    enrich._first_wait = 2.0  # (the fixture's enricher never waits; a default one does, once)
    [k] = enrich(kernel_frame(0)).kernels
    assert k.notebook == "work/analysis.ipynb"
    jupyter_server["delay"] = 1.0
    start = time.monotonic()
    enrich(kernel_frame(1))  # later passes never wait
    assert time.monotonic() - start < 0.5


@pytest.mark.slow
def test_a_slow_jupyter_server_never_holds_up_a_pass(jupyter_server):
    jupyter_server["delay"] = 1.5
    enrich = jupyter_server["enricher"]
    start = time.monotonic()
    for t in range(5):
        enrich(kernel_frame(t))
    assert time.monotonic() - start < 0.5
    enrich.wait_idle(timeout=10)
    assert [k.notebook for k in enrich(kernel_frame(6)).kernels] == ["work/analysis.ipynb"]


def test_other_machines_and_the_demo_are_not_looked_up(jupyter_server):
    enrich = jupyter_server["enricher"]
    remote = kernel_frame(0)
    gpu = remote.gpus[0]
    import dataclasses

    for f in (
        dataclasses.replace(remote, simulated=True),
        dataclasses.replace(remote, gpus=(dataclasses.replace(gpu, host="lab2"),)),
    ):
        assert enrich(f).kernels == () and enrich._pending is None
