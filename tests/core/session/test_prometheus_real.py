"""A real Prometheus (Debian's package) scrapes `vramscope record --prometheus` on loopback
and returns the GPU memory the recorder saw."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

from vramscope.core.session import open_session

pytestmark = pytest.mark.slow


def _install_prometheus() -> str | None:
    found = shutil.which("prometheus") or (
        "/usr/bin/prometheus" if os.path.exists("/usr/bin/prometheus") else None
    )
    if found:
        return found
    if not shutil.which("apt-get"):
        return None
    prefix = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if prefix is None:
        return None
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        subprocess.run(prefix + ["apt-get", "update"], env=env, capture_output=True, timeout=300)
        subprocess.run(
            prefix + ["apt-get", "install", "-y", "--no-install-recommends", "prometheus"],
            env=env,
            capture_output=True,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return shutil.which("prometheus") or (
        "/usr/bin/prometheus" if os.path.exists("/usr/bin/prometheus") else None
    )


@pytest.fixture(scope="module")
def prometheus_binary():
    path = _install_prometheus()
    if path is None:
        pytest.skip(
            "the real Prometheus server is needed: Debian's package 'prometheus' is not "
            "installed here and `apt-get install prometheus` was not possible "
            "(no apt-get, no root/sudo, or no package mirror)"
        )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _query(port: int, promql: str) -> list:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


@pytest.mark.slow
def test_real_prometheus_scrapes_record(prometheus_binary, tmp_path):
    rec_port, prom_port = _free_port(), _free_port()
    session = tmp_path / "scraped.vramscope"
    recorder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vramscope",
            "record",
            "--demo",
            "--out",
            str(session),
            "--prometheus",
            f"127.0.0.1:{rec_port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    prom = None
    try:
        for _ in range(3):
            line = recorder.stdout.readline()
            if "Prometheus metrics at" in line:
                break
        assert f"http://127.0.0.1:{rec_port}/metrics" in line, line
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: vramscope\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{rec_port}']\n"
        )
        prom = subprocess.Popen(
            [
                prometheus_binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 45
        used, total, kernel = [], [], []
        while time.monotonic() < deadline:
            try:
                used = _query(prom_port, "vramscope_gpu_memory_used_bytes")
                total = _query(prom_port, "vramscope_gpu_memory_total_bytes")
                kernel = _query(prom_port, 'vramscope_process_memory_used_bytes{process="python3"}')
                if len(used) == 2 and len(total) == 2 and kernel:
                    break
            except OSError:
                pass  # Prometheus still starting
            time.sleep(0.5)
        assert len(used) == 2, "Prometheus never returned the recorder's GPU memory"
        assert len(total) == 2 and kernel
    finally:
        recorder.send_signal(signal.SIGTERM)
        recorder.communicate(timeout=20)
        if prom is not None:
            prom.terminate()
            try:
                prom.wait(10)
            except subprocess.TimeoutExpired:
                prom.kill()
    assert recorder.returncode == 0
    with open_session(session) as r:
        cols = r.samples.gpu_columns()
        for sample in used:
            gpu = int(sample["metric"]["gpu"])
            value = float(sample["value"][1])
            seen = cols.values["used"][cols.gpu == gpu]
            assert value in seen, f"GPU {gpu}: Prometheus has {value}, the recorder never saw it"
            assert sample["metric"]["uuid"] == {g.index: g.uuid for g in r.gpus()}[gpu]
        for sample in total:
            gpu = int(sample["metric"]["gpu"])
            assert float(sample["value"][1]) == np.unique(cols.values["total"][cols.gpu == gpu])[0]
        procs = r.samples.proc_columns()
        for sample in kernel:
            pid = int(sample["metric"]["pid"])
            ids = [p.id for p in r.processes().values() if p.pid == pid]
            assert float(sample["value"][1]) in procs.used[np.isin(procs.proc, ids)]
