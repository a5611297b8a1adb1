"""`vramscope status --json --watch` against the fake libnvidia-ml.so.1 with real
processes: a real Jupyter kernel and a real idle Python process holding memory
are flagged, a busy one is not; the End action works on the real kernel."""

from __future__ import annotations

import json
import subprocess
import sys

import psutil
import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.core.end_process.actions import ProcessActions


@pytest.fixture
def real_processes(tmp_path):
    conn = tmp_path / "kernel-5e1f0c2a-test.json"
    kernel = subprocess.Popen(
        [sys.executable, "-m", "ipykernel_launcher", "-f", str(conn)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    procs = {"kernel": kernel, "idle": idle, "busy": busy}
    yield procs, conn
    for p in procs.values():
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def state_with(procs) -> FakeState:
    return FakeState(
        gpus=[
            FakeGpu(
                total=24 * GiB,
                used=15 * GiB,
                utilization=(80, 30),
                processes=[
                    FakeProcess(procs["kernel"].pid, 3 * GiB),  # no SM sample: 0 %
                    FakeProcess(procs["idle"].pid, 2 * GiB),
                    FakeProcess(procs["busy"].pid, 10 * GiB, sm=85),
                ],
            )
        ]
    )


@pytest.mark.slow
def test_status_watch_flags_real_kernel_and_idle_process_not_busy_one(fake_nvml_files, real_processes):
    procs, conn = real_processes
    fake_nvml_files.write(state_with(procs))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramscope",
            "status",
            "--json",
            "--watch",
            "2.5",
            "--interval",
            "0.5",
            "--idle-minutes",
            "0.02",
            "--kernel-idle-minutes",
            "0.02",
        ],
        env=fake_nvml_files.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    squatters = {a["pid"]: a for a in report["alerts"] if a["kind"] == "squatter"}
    assert set(squatters) == {procs["kernel"].pid, procs["idle"].pid}
    kernel = squatters[procs["kernel"].pid]
    assert kernel["connection_file"] == str(conn)
    assert "Jupyter kernel" in kernel["message"] and "3.0 GiB" in kernel["message"]
    assert any("notebook: not found" in e for e in kernel["evidence"])  # no Jupyter server here
    assert "Shut it down from Jupyter" in kernel["fix"]
    idle = squatters[procs["idle"].pid]
    assert idle["frees_bytes"] == 2 * GiB and idle["since"] is not None
    assert any("0 % SM since" in e for e in idle["evidence"])
    for a in report["alerts"]:
        for key in ("kind", "severity", "gpu", "pid", "since", "message", "evidence", "fix"):
            assert key in a


def test_status_without_watch_does_not_call_a_fresh_process_idle(fake_nvml_files, real_processes):
    procs, _ = real_processes
    fake_nvml_files.write(state_with(procs))
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--json"],
        env=fake_nvml_files.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert [a for a in json.loads(r.stdout)["alerts"] if a["kind"] == "squatter"] == []


def test_end_action_on_the_real_kernel_offers_connection_file_then_ends_it(real_processes, tmp_path):
    procs, conn = real_processes
    kernel = procs["kernel"]
    start = psutil.Process(kernel.pid).create_time()
    actions = ProcessActions(audit_path=tmp_path / "audit.jsonl")
    summary = actions.describe(kernel.pid, start, memory=3 * GiB)
    assert summary.connection_file == str(conn) and summary.own
    result = actions.terminate(kernel.pid, start, memory=3 * GiB)
    assert result.ok and result.connection_file == str(conn)
    assert actions.wait_gone(kernel.pid, start, 15)  # exited (a zombie until reaped counts as gone)
    assert kernel.wait(timeout=15) is not None
    assert (tmp_path / "audit.jsonl").read_text().count("\n") == 1


@pytest.mark.slow
def test_status_watch_explains_a_real_idle_vllm_server_and_reads_its_metrics(fake_nvml_files, tmp_path):
    """A vLLM launcher (a real `python -m vllm.entrypoints.openai.api_server` serving
    Prometheus text on 127.0.0.1) whose worker holds 95 % of a 24 GiB card at 0 % SM:
    at the end of the watch it is explained at INFO with its KV cache, never a
    squatter, never near-OOM."""
    from fakeservers import VLLM_METRICS, start_fake_server

    launcher, port, worker = start_fake_server(
        tmp_path,
        "vllm.entrypoints.openai.api_server",
        VLLM_METRICS.replace("3.0", "0.0").replace(
            'waiting{engine="0",model_name="Qwen/Qwen2.5-7B"} 1.0',
            'waiting{engine="0",model_name="Qwen/Qwen2.5-7B"} 0.0',
        ),
    )
    try:
        used = int(0.95 * 24 * GiB)
        fake_nvml_files.write(
            FakeState(
                gpus=[
                    FakeGpu(
                        total=24 * GiB,
                        used=used + 300 * (1 << 20),
                        utilization=(0, 0),
                        processes=[FakeProcess(worker, used)],
                    )
                ]
            )
        )
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "vramscope",
                "status",
                "--json",
                "--watch",
                "3",
                "--interval",
                "0.5",
                "--idle-minutes",
                "0.02",
            ],
            env=fake_nvml_files.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
    finally:
        launcher.terminate()
        launcher.wait(timeout=10)
    kinds = {a["kind"] for a in report["alerts"]}
    assert "squatter" not in kinds and "near_oom" not in kinds
    [info] = [a for a in report["alerts"] if a["kind"] == "inference_server"]
    assert info["severity"] == "info" and info["pid"] == worker  # named as the table names it
    assert any(f"launcher): pid {launcher.pid}, serving on port {port}" in e for e in info["evidence"])
    assert any("KV cache 42% used" in e for e in info["evidence"])
    assert any("--gpu-memory-utilization 0.9 (the default)" in e for e in info["evidence"])
    [server] = report["servers"]
    assert server["kind"] == "vllm" and server["port"] == port and server["pids"] == [worker]
    assert server["kv_cache_usage"] == 0.42 and server["running"] == 0.0


@pytest.mark.slow
def test_status_watch_calls_the_idle_ranks_of_a_live_job_a_stall_not_squatters(fake_nvml_files):
    """Two ranks of one launcher (this test's process), one command line but for --rank,
    idle together without the agent: a stalled job to look into (issue 46), not two
    squatters to end."""
    code = "import time; time.sleep(300)"
    ranks = [subprocess.Popen([sys.executable, "-c", code, "--rank", str(r)]) for r in range(2)]
    try:
        fake_nvml_files.write(
            FakeState(
                gpus=[
                    FakeGpu(
                        total=24 * GiB,
                        used=13 * GiB,
                        utilization=(0, 0),
                        processes=[FakeProcess(p.pid, 6 * GiB) for p in ranks],
                    )
                ]
            )
        )
        r = subprocess.run(
            [sys.executable, "-m", "vramscope", "status", "--json", "--watch", "2.5", "--interval", "0.5"]
            + ["--idle-minutes", "0.02"],
            env=fake_nvml_files.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        alerts = json.loads(r.stdout)["alerts"]
        assert sorted((a["kind"], a["pid"]) for a in alerts) == sorted(("stalled", p.pid) for p in ranks)
        assert all("one of 2 processes of one job" in a["message"] for a in alerts)
    finally:
        for p in ranks:
            p.kill()
            p.wait(timeout=10)
