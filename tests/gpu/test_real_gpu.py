"""Checks against a REAL driver and REAL CUDA, for a session that is lent a GPU.

Skipped wherever there is no NVIDIA driver or no CUDA torch (every CI run).
On the device machine, from the repository root:

    PYTHONPATH=app python3 -m pytest -q -p no:cacheprovider tests/gpu

- `vramscope status --json` against nvidia-smi (totals exact, used close);
- a CUDA training loop under `vramscope run`: the agent's allocated/reserved
  equal torch.cuda.memory_stats() while idle, its weights/gradients/optimizer
  buckets equal the real tensor sizes, the process's NVML memory covers
  reserved (the rest is "outside PyTorch"), and a provoked OOM arrives as an
  event with the requested size.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
VRAMSCOPE = [sys.executable, "-m", "vramscope"]
MiB = 1 << 20


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


pytestmark = [
    pytest.mark.skipif(not _has_gpu(), reason="needs an NVIDIA GPU with its driver and CUDA torch"),
    pytest.mark.timeout(300),
]


def _smi(query: str) -> list[list[str]]:
    r = subprocess.run(
        ["nvidia-smi", f"--query-{query}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [[c.strip() for c in line.split(",")] for line in r.stdout.strip().splitlines() if line]


def _status() -> dict:
    r = subprocess.run(VRAMSCOPE + ["status", "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_status_json_agrees_with_nvidia_smi():
    doc = _status()
    smi = {row[1]: row for row in _smi("gpu=index,uuid,name,memory.total,memory.used")}
    assert len(doc["gpus"]) == len(smi)
    for gpu in doc["gpus"]:
        assert gpu["error"] is None
        row = smi[gpu["uuid"]]
        assert gpu["name"] == row[2]
        assert gpu["memory"]["total"] // MiB == int(row[3])  # nvidia-smi rounds to MiB
        assert abs(gpu["memory"]["used"] // MiB - int(row[4])) <= 64  # v2 vs v1 accounting, drift
        assert gpu["memory"]["reserved"] is None or gpu["memory"]["reserved"] >= 0


@pytest.fixture
def cuda_run(tmp_path, monkeypatch):
    rt = tempfile.mkdtemp(prefix="vs-")
    monkeypatch.setenv("VRAMSCOPE_RUNTIME_DIR", rt)
    out, release = tmp_path / "run.json", tmp_path / "release"
    proc = subprocess.Popen(
        VRAMSCOPE + ["run", "--", sys.executable, str(HERE / "cuda_train.py"), str(out), str(release)]
    )
    yield proc, out
    release.touch()
    proc.wait(60)
    shutil.rmtree(rt, ignore_errors=True)


def _wait_json(path: Path, phase: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            doc = json.loads(path.read_text())
            if doc.get("phase") == phase:
                return doc
        time.sleep(0.1)
    pytest.fail(f"the CUDA run did not reach {phase!r}")


def test_agent_matches_cuda_memory_stats_and_sees_the_oom(cuda_run):
    from vramscope.core.samples import Frame
    from vramscope.sources.agents.agent_client import AgentClient

    proc, out = cuda_run
    real = _wait_json(out, "trained")
    client = AgentClient()
    report = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # an agent sample taken after the child went idle
        frame = client(Frame(time=time.time()))
        mine = [r for r in frame.agents if r.pid == real["pid"]]
        if mine and mine[0].time is not None and mine[0].time > real["t"] + 0.6:
            report = mine[0]
            break
        time.sleep(0.2)
    assert report is not None, "the agent never reported after the run went idle"
    cuda = {d.device: d for d in report.devices}["cuda:0"]
    assert cuda.allocated == real["allocated"] and cuda.reserved == real["reserved"]
    assert (cuda.buckets.weights, cuda.buckets.gradients, cuda.buckets.optimizer_state) == (
        real["weights"],
        real["gradients"],
        real["optimizer_state"],
    )

    doc = _status()  # NVML's figure for the process covers what PyTorch reserved
    [proc_row] = [p for g in doc["gpus"] for p in g["processes"] if p["pid"] == real["pid"]]
    assert proc_row["agent"] is True
    assert proc_row["used"] is None or proc_row["used"] >= real["reserved"]

    after = _wait_json(out, "oom")
    assert after["oom"] is True
    oom_events = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not oom_events:
        frame = client(Frame(time=time.time()))
        for r in frame.agents:
            if r.pid == real["pid"]:
                oom_events += [e for e in r.events + r.recent_events if e.kind == "oom"]
        time.sleep(0.2)
    assert oom_events, "the OOM never reached the monitor"
    requested = oom_events[0].data.get("requested")
    assert requested is not None and requested >= 10**12  # the allocator rounds up, never down
