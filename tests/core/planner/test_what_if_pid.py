"""`vramscope plan --pid`: a running CPU training process, measured by its agent at
one micro-batch, predicted at 2x and 4x -- within 5 % of real runs at those sizes
(activations saved for backward + weights + gradients + optimizer state, counted
independently: tests/core/planner/what_if_runs.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.planner.what_if_runs import counted_step

HERE = Path(__file__).resolve().parent
APP = HERE.parents[2] / "app"


def _plan(pid: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vramscope", "plan", "--pid", str(pid), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=f"{APP}{os.pathsep}{HERE.parents[2]}"),
    )


@pytest.fixture
def training(tmp_path):
    procs = []

    def start(kind: str, batch: int) -> int:
        ready, stop = tmp_path / f"ready-{kind}", tmp_path / f"stop-{kind}"
        p = subprocess.Popen(
            [sys.executable, str(HERE / "what_if_train.py"), kind, str(batch), str(ready), str(stop)],
            env=dict(os.environ, PYTHONPATH=f"{APP}{os.pathsep}{HERE.parents[2]}"),
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append((p, stop))
        deadline = time.monotonic() + 90
        while not ready.exists():
            assert p.poll() is None, p.stderr.read()
            assert time.monotonic() < deadline, "the training child never got going"
            time.sleep(0.1)
        time.sleep(0.3)  # a sample after the ready step
        return p.pid

    yield start
    for p, stop in procs:
        stop.touch()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["mlp", "lm"])
def test_plan_pid_predicts_2x_and_4x_the_micro_batch_within_5_percent(training, kind):
    pid = training(kind, 8)
    for factor in (2, 4):
        batch = str(8 * factor) if factor == 2 else f"{factor}x"  # 4x: a multiple of the measured 8
        r = _plan(pid, "--batch", batch, "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["measured"]["batch"] == 8
        assert out["measured"]["modules"] > 0  # planned from the per-module activations
        real = counted_step(kind, 8 * factor)["real"]
        assert abs(out["peak"] - real) / real <= 0.05, (factor, out, real)
        assert out["peak"] == out["peak_high"]  # the batch alone: no range
        scales = {p["name"]: p["scales"] for p in out["parts"]}
        assert scales["weights"] == scales["optimizer state"] == "fixed"
        assert scales["activations"] == ("batch" if kind == "mlp" else "batch x seq")


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_plan_pid_text_names_the_parts_and_says_why_without_a_gpu(training):
    pid = training("mlp", 8)
    r = _plan(pid, "--batch", "32")
    assert r.returncode == 0, r.stderr
    assert "micro-batch 8" in r.stdout and "micro-batch 32" in r.stdout
    assert "activations" in r.stdout and "fixed" in r.stdout
    # no NVIDIA GPU holds this CPU process: judged against nothing, and said so
    assert "no GPU to judge against" in r.stdout or "capacity" in r.stdout


def test_plan_pid_without_an_agent_says_so_in_one_line():
    r = _plan(os.getpid(), "--batch", "2x")
    assert r.returncode == 2  # as `vramscope sites` for no agent
    assert r.stderr.count("\n") == 1 and "no vramscope agent found" in r.stderr
    sites = subprocess.run(
        [sys.executable, "-m", "vramscope", "sites", str(os.getpid())],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(APP)),
    )
    assert sites.returncode == r.returncode


def test_a_batch_multiple_needs_a_measured_batch():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramscope",
            "plan",
            "--params",
            "1B",
            "--batch",
            "2x",
            "--gpu-memory",
            "24GiB",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(APP)),
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "needs --pid" in r.stderr
    bad = _plan(os.getpid(), "--batch", "twice")
    assert bad.returncode == 2 and "multiple of the measured one (2x)" in bad.stderr
