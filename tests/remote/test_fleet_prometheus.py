"""A fleet through a real Prometheus server (Debian package `prometheus`):
it scrapes two `vramscope record --prometheus` exporters with different fake
NVML states (one process in a real Slurm job's cgroup, where the machine
allows) and a stand-in dcgm-exporter whose GPU a Kubernetes pod holds;
vramscope reads them back, dcgm-exporter's machine by its Hostname."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import psutil
import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, subprocess_env, write_state
from containers.cgroup_staging import Staging, why_not
from remote.conftest import private_dirs
from vramscope.sources.remote.hosts import HOST_BLOCK
from vramscope.sources.remote.prometheus import PrometheusSource
from vramscope.sources.remote.host_stream import CONNECTED, DOWN

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None, reason="Prometheus is not installed (apt-get install prometheus)"
)

DCGM_HOST = "dgx1"  # dcgm-exporter's Hostname label: the machine's name in the fleet
DCGM_TEXT = "".join(
    f'# TYPE {name} gauge\n{name}{{gpu="0",UUID="GPU-dcgm-0",device="nvidia0",'
    f'modelName="NVIDIA H100 80GB HBM3",Hostname="{DCGM_HOST}",'
    f'container="trainer",namespace="ml-team",pod="trainer-7f9c"}} {mib}\n'
    for name, mib in (
        ("DCGM_FI_DEV_FB_USED", 40960),
        ("DCGM_FI_DEV_FB_FREE", 39936),
        ("DCGM_FI_DEV_FB_RESERVED", 1024),
    )
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DcgmStandIn(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = DCGM_TEXT.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


class Fleet:
    def __init__(self, base, lib_dir):
        self.base = base
        self.procs: list[subprocess.Popen] = []
        self.sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(2)]
        # the first one runs in a Slurm job (cgroup v2 layout), where this machine lets a test make cgroups
        self.staging, self.job = Staging(), None
        if why_not(2) is None:
            self.job = 660_000 + self.sleepers[0].pid % 100_000
            self.staging.move(
                self.sleepers[0].pid, f"system.slice/slurmstepd.scope/job_{self.job}/step_0/user/task_0", 2
            )
        self.states = {
            "a": FakeState(
                gpus=[
                    FakeGpu(
                        name="NVIDIA RTX A6000",
                        total=48 * GiB,
                        used=30 * GiB,
                        processes=[FakeProcess(self.sleepers[0].pid, 29 * GiB, sm=90)],
                    ),
                    FakeGpu(name="NVIDIA RTX A6000", total=48 * GiB, used=1 * GiB),
                ]
            ),
            "b": FakeState(
                gpus=[
                    FakeGpu(
                        name="NVIDIA GeForce RTX 4090",
                        total=24 * GiB,
                        used=20 * GiB,
                        processes=[FakeProcess(self.sleepers[1].pid, 19 * GiB)],
                    )
                ]
            ),
        }
        self.ports = {}
        for name, state in self.states.items():
            state_path = base / f"{name}.txt"
            write_state(state_path, state)
            port = self.ports[name] = free_port()
            env = subprocess_env(lib_dir, state_path)
            env.update(private_dirs(base / name))
            self.procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "vramscope",
                        "record",
                        "--prometheus",
                        f"127.0.0.1:{port}",
                        "--interval",
                        "0.5",
                        "--out",
                        str(base / f"{name}.vramscope"),
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        self.dcgm = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DcgmStandIn)
        threading.Thread(target=self.dcgm.serve_forever, daemon=True).start()
        self.ports["dcgm"] = self.dcgm.server_address[1]
        self.instances = {k: f"127.0.0.1:{p}" for k, p in self.ports.items()}
        config = base / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - job_name: vramscope\n    static_configs: [{{targets: ['{self.instances['a']}', "
            f"'{self.instances['b']}']}}]\n"
            f"  - job_name: dcgm\n    static_configs: [{{targets: ['{self.instances['dcgm']}']}}]\n"
        )
        self.url = f"http://127.0.0.1:{free_port()}"
        self.procs.append(
            subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={base / 'tsdb'}",
                    f"--web.listen-address={self.url.split('//')[1]}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        self.wait_for(lambda: self.scraped() >= 3, "three scraped instances")

    def scraped(self) -> int:
        try:
            doc = get_json(
                f"{self.url}/api/v1/query?query=count%20by%20(instance)%20"
                "(%7B__name__%3D~%22vramscope_gpu_memory_used_bytes%7CDCGM_FI_DEV_FB_USED%22%7D)"
            )
        except OSError:
            return 0
        return len(doc["data"]["result"])

    def wait_for(self, predicate, what, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}")

    def close(self):
        self.dcgm.shutdown()
        for p in self.procs + self.sleepers:
            p.terminate()
        for p in self.procs + self.sleepers:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.staging.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, fake_nvml_build):
    f = Fleet(tmp_path_factory.mktemp("fleet"), fake_nvml_build().parent)
    yield f
    f.close()


@pytest.mark.slow
def test_the_fleet_frame_has_every_host_and_its_gpus(fleet):
    source = PrometheusSource(fleet.url)
    frame = source.sample(time.time())
    a, b, dcgm = fleet.instances["a"], fleet.instances["b"], DCGM_HOST
    assert {s.host: s.state for s in frame.hosts} == {a: CONNECTED, b: CONNECTED, dcgm: CONNECTED}
    by_host: dict = {}
    for g in frame.gpus:
        by_host.setdefault(g.host, []).append(g)
    assert [(g.host_index, g.used, g.total, g.name) for g in by_host[a]] == [
        (0, 30 * GiB, 48 * GiB, "NVIDIA RTX A6000"),
        (1, 1 * GiB, 48 * GiB, "NVIDIA RTX A6000"),
    ]
    assert [(g.used, g.total) for g in by_host[b]] == [(20 * GiB, 24 * GiB)]
    (h100,) = by_host[dcgm]  # dcgm-exporter's MiB fields, total = used + free + reserved
    assert (h100.used, h100.free, h100.reserved, h100.total, h100.name, h100.uuid) == (
        40 * GiB,
        39 * GiB,
        1 * GiB,
        80 * GiB,
        "NVIDIA H100 80GB HBM3",
        "GPU-dcgm-0",
    )
    procs = {p.pid: p.used for g in by_host[a] + by_host[b] for p in g.processes}
    assert procs == {fleet.sleepers[0].pid: 29 * GiB, fleet.sleepers[1].pid: 19 * GiB}
    # dcgm-exporter names the pod holding its GPU: its entry has the GPU's memory
    (pod,) = h100.processes
    assert (pod.used, pod.info.container.pod, pod.info.container.namespace, pod.info.container.name) == (
        40 * GiB,
        "trainer-7f9c",
        "ml-team",
        "trainer",
    )
    # vramscope's own exporter labels the process with its user and Slurm job
    (ours,) = by_host[a][0].processes
    assert ours.info.user == psutil.Process(fleet.sleepers[0].pid).username()
    if fleet.job is not None:
        assert ours.info.slurm.job_id == fleet.job
    # grouped by host, each host in its own block of indices
    assert len({g.index // HOST_BLOCK for g in frame.gpus}) == 3
    assert all(g.label.startswith(g.host) for g in frame.gpus)


def test_status_json_from_prometheus_lists_each_host(fleet):
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--json", "--from-prometheus", fleet.url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    hosts = {h["host"]: h for h in json.loads(r.stdout)["hosts"]}
    assert [g["memory"]["used"] for g in hosts[fleet.instances["b"]]["gpus"]] == [20 * GiB]
    assert [g["index"] for g in hosts[fleet.instances["a"]]["gpus"]] == [0, 1]
    [pod] = hosts[DCGM_HOST]["pods"]
    assert (pod["key"], pod["used"], pod["stop"]) == (
        "ml-team/trainer-7f9c",
        40 * GiB,
        "kubectl delete pod trainer-7f9c -n ml-team",
    )
    if fleet.job is not None:
        [job] = hosts[fleet.instances["a"]]["slurm_jobs"]
        assert (job["key"], job["used"], job["stop"]) == (str(fleet.job), 29 * GiB, f"scancel {fleet.job}")


@pytest.mark.slow
def test_one_host_s_history_through_range_queries(fleet):
    time.sleep(2.5)  # a few scrapes
    source = PrometheusSource(fleet.url)
    end = time.time()
    history = source.history(fleet.instances["a"], end - 60, end, points=60)
    assert sorted(history) == [0, 1]
    assert len(history[0]["t"]) >= 2
    assert set(history[0]["used"]) == {30 * GiB} and set(history[0]["total"]) == {48 * GiB}
    dcgm = source.history(DCGM_HOST, end - 60, end, points=60)
    assert set(dcgm[0]["used"]) == {40 * GiB} and set(dcgm[0]["total"]) == {80 * GiB}


@pytest.mark.slow
def test_the_window_s_fleet_overview_clicks_through_to_a_host_s_history(fleet, qapp, qtbot, artifacts_dir):
    import argparse

    from vramscope.ui.qt import theme
    from vramscope.ui.window.app import build_window

    theme.apply(qapp)
    args = argparse.Namespace(
        demo=False,
        host=None,
        from_prometheus=fleet.url,
        interval=1.0,
        window="10m",
        record=False,
        read_only=False,
        prometheus=None,
        file=None,
    )
    pipeline, window = build_window(args, poll_ms=60_000)
    qtbot.addWidget(window)
    try:
        window.resize(1400, 900)
        window.show()
        pipeline.start()
        fleet.wait_for(
            lambda: (
                (window.refresh(force=True) or qtbot.wait(50) or True) and len(window.gpu_panel.cards) == 4
            ),
            "the fleet's four GPUs",
        )
        assert window.services.actions.read_only  # a fleet is only looked at
        heads = sorted(c.heading.text().split("  ·  ")[0] for c in window.gpu_panel.cards.values())
        a = fleet.instances["a"]
        assert f"{a} GPU 1" in heads
        assert window.windowTitle() == "vramscope — 3 hosts"
        assert window.controls.source_label.text().strip() == "Source: 3 hosts from Prometheus"
        view = window.fleet_view
        window.tabs.setCurrentIndex(window.tabs.indexOf(view))
        window.refresh(force=True)
        qtbot.wait(100)
        rows = {
            view.table.item(r, 0).text(): [view.table.item(r, c).text() for c in range(6)]
            for r in range(view.table.rowCount())
        }
        assert rows[a][1:4] == ["up", "2", "31.0 GiB / 96.0 GiB"]
        assert rows[DCGM_HOST][3] == "40.0 GiB / 80.0 GiB"
        view.table.cellClicked.emit(list(rows).index(a), 0)
        qtbot.waitUntil(lambda: view.history is not None, timeout=15000)
        assert sorted(view.history) == [0, 1]
        assert view.title.text().startswith(f"{a}: memory")
        qtbot.wait(100)
        window.grab().save(str(artifacts_dir / "fleet-overview-1400x900.png"))
        window.resize(1024, 700)
        qtbot.wait(200)
        window.grab().save(str(artifacts_dir / "fleet-overview-1024x700.png"))
    finally:
        window.services.close()


def test_the_grafana_dashboard_s_queries_run_on_this_prometheus(fleet):
    from remote.test_grafana_dashboard import dashboard_exprs
    from vramscope.sources.remote.prometheus import PrometheusClient

    client = PrometheusClient(fleet.url)
    answered = {}
    for expr in dashboard_exprs():
        answered[expr] = client.query(expr.replace("$instance", ".*"))  # raises if refused
    memory = [e for e in answered if e.startswith("vramscope_gpu_memory_used_bytes")]
    assert memory and len(answered[memory[0]]) == 3  # the two exporters' three GPUs
    [dcgm_pods] = [answered[e] for e in answered if "DCGM_FI_DEV_FB_USED" in e]
    assert [(r["metric"]["pod"], float(r["value"][1])) for r in dcgm_pods] == [("trainer-7f9c", 40 * GiB)]
    if fleet.job is not None:
        [jobs] = [answered[e] for e in answered if e.startswith("sum by (slurm_job")]
        assert [(r["metric"]["slurm_job"], float(r["value"][1])) for r in jobs] == [
            (str(fleet.job), 29 * GiB)
        ]


def test_a_bad_url_and_an_unreachable_server_say_so_in_one_line():
    with pytest.raises(ValueError, match="not a Prometheus URL"):
        PrometheusSource("localhost:9090")
    frame = PrometheusSource(f"http://127.0.0.1:{free_port()}", timeout=2).sample(time.time())
    assert frame.gpus == () and frame.error.startswith("cannot reach Prometheus at")


@pytest.mark.slow
def test_a_recorded_fleet_reopens_and_exports_with_each_host(fleet, tmp_path):
    """The hosts of a fleet come and go with Prometheus's targets (no fixed list
    in the session's meta): each GPU and process is stored with its host."""
    import csv

    from vramscope.core.session import open_session

    out = tmp_path / "fleet.vramscope"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramscope",
            "record",
            "--from-prometheus",
            fleet.url,
            "--interval",
            "0.5",
            "--duration",
            "2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    a, b, dcgm = fleet.instances["a"], fleet.instances["b"], DCGM_HOST
    with open_session(out) as reader:
        labels = sorted(g.label for g in reader.latest_frame().gpus)
        assert labels == sorted([f"{a} GPU 0", f"{a} GPU 1", f"{b} GPU 0", f"{dcgm} GPU 0"])
        hosts_of = {p.pid: p.host for p in reader.processes().values()}
        # the pod dcgm-exporter names has no pid (0) of its own
        assert hosts_of == {fleet.sleepers[0].pid: a, fleet.sleepers[1].pid: b, 0: dcgm}
    csv_out = tmp_path / "fleet.csv"
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "export", str(out), "--out", str(csv_out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.DictReader(open(csv_out)))
    used = {(x["host"], x["gpu"], x["pid"]): int(x["value"]) for x in rows if x["metric"] == "used"}
    assert used[(b, "0", "")] == 20 * GiB and used[(b, "0", str(fleet.sleepers[1].pid))] == 19 * GiB
    assert {x["host"] for x in rows} == {a, b, dcgm}


@pytest.mark.slow
def test_a_host_prometheus_cannot_scrape_is_marked_while_the_others_go_on(fleet):
    source = PrometheusSource(fleet.url)
    source.sample(time.time())
    fleet.procs[1].terminate()  # exporter b stops
    fleet.procs[1].wait(10)
    b = fleet.instances["b"]

    def b_down():
        frame = source.sample(time.time())
        states = {s.host: s.state for s in frame.hosts}
        return states[b] == DOWN and states[fleet.instances["a"]] == CONNECTED and frame

    fleet.wait_for(b_down, "b marked down", timeout=30)
    frame = source.sample(time.time())
    (gb,) = [g for g in frame.gpus if g.host == b]
    assert gb.error and gb.used is None and gb.total == 24 * GiB
