"""The PyTorch agent on the remote box is read through the stream: the
remote `vramscope stream` is the agent's client there, and its reports (real
bucket sizes, steps) reach the watching side unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.core.store.store import Store
from vramscope.sources.agents.agent_client import agent_key
from vramscope.sources.choose import AgentEnricher
from vramscope.sources.remote.hosts import HostsSource

SCRIPT = Path(__file__).resolve().parents[1] / "agent" / "cpu_train.py"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def remote_training(tmp_path):
    """A `vramscope run` training script on the "remote" box (its own runtime dir)."""
    runtime = tempfile.mkdtemp(prefix="vs-")  # AF_UNIX paths are short: not under tmp_path
    out, release = tmp_path / "run.json", tmp_path / "release"
    env = dict(os.environ, CPU_TRAIN_WAIT=str(release), VRAMSCOPE_RUNTIME_DIR=runtime)
    proc = subprocess.Popen(
        [sys.executable, "-m", "vramscope", "run", "--", sys.executable, str(SCRIPT), str(out), "30", "0.02"],
        env=env,
    )
    deadline = time.monotonic() + 60
    while not (out.exists() and json.loads(out.read_text())["steps_done"] == 30):
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the training script did not finish its steps")
        time.sleep(0.05)
    yield json.loads(out.read_text()), runtime
    release.touch()
    proc.wait(30)
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.slow
def test_the_remote_agent_reaches_the_window_through_the_stream(hosts, remote_training):
    run, runtime = remote_training
    hosts.add(
        "trainer",
        FakeState(gpus=[FakeGpu(used=2 * GiB, processes=[FakeProcess(run["pid"], 2 * GiB, sm=40)])]),
        VRAMSCOPE_RUNTIME_DIR=runtime,
    )
    source = HostsSource(["trainer"], interval=0.3)
    store = Store()
    enrich = AgentEnricher(store)  # what the window applies: records, never connects locally
    try:
        deadline = time.monotonic() + 60
        report = None
        steps = 0
        while time.monotonic() < deadline:
            frame = enrich(source.sample(time.time()))
            store.append(frame)
            if frame.agents and frame.agents[0].step == 30 and frame.agents[0].devices:
                report = frame.agents[0]
                t, v = store.series(agent_key(report.pid, report.start_time, "steps", "step"))
                steps = len(v)
                if steps:
                    break
            time.sleep(0.3)
        assert report is not None, "no agent report came through the stream"
        assert report.pid == run["pid"]
        proc = frame.gpus[0].processes[0]
        assert proc.pid == run["pid"] and proc.has_agent
        cpu = {d.device: d for d in report.devices}["cpu"]
        assert cpu.buckets.weights == run["weights"]
        assert cpu.buckets.gradients == run["gradients"]
        assert cpu.buckets.optimizer_state == run["optimizer_state"]
        assert steps >= 1  # step events handed through into the local store's series
        assert enrich._client is None  # this side never looked for agents of its own
    finally:
        source.close()
        enrich.close()
