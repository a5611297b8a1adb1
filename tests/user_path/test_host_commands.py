"""`status --host` and `record --host` + `export` when the host runs a PyTorch
agent: the host's agent reaches each command whole (its per-module figures
included), no sample is lost, and no process prints a traceback."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time

import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from user_path.helpers import Training, no_traceback

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


@pytest.fixture
def trainer(hosts, tmp_path):
    """A host "trainer" whose GPU holds a training process running the agent."""
    training = Training(tmp_path)
    hosts.add(
        "trainer",
        FakeState(gpus=[FakeGpu(used=2 * GiB, processes=[FakeProcess(training.pid, 2 * GiB, sm=40)])]),
        VRAMSCOPE_RUNTIME_DIR=training.runtime,
    )
    yield training
    training.close()


def vramscope(hosts, *args, timeout=120):
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", *args],
        env=hosts.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    no_traceback(done.stdout, done.stderr)
    return done


def test_status_host_shows_the_hosts_agent_with_its_modules(hosts, trainer):
    done = vramscope(hosts, "status", "--host", "trainer", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    agents = (
        [a for host in data["hosts"] for a in host.get("agents", ())] if "hosts" in data else data["agents"]
    )
    (agent,) = [a for a in agents if a["pid"] == trainer.pid]
    names = {m["name"] for m in agent["modules"]}
    assert {"0", "2"} <= names  # the Sequential's two Linear layers, by their names
    weights = {m["name"]: m["weights"] for m in agent["modules"]}
    assert weights["0"] + weights["2"] == trainer.run["weights"]  # to the byte, through ssh and the stream
    text = vramscope(hosts, "status", "--host", "trainer")
    assert text.returncode == 0 and str(trainer.pid) in text.stdout


def test_record_host_loses_no_sample_and_exports_the_hosts_modules(hosts, trainer, tmp_path):
    out = tmp_path / "trainer.vramscope"
    done = vramscope(
        hosts, "record", "--host", "trainer", "--interval", "0.5", "--duration", "6", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert "could not be written" not in done.stderr + done.stdout
    exported = vramscope(hosts, "export", str(out), "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(out.with_suffix(".csv").read_text().splitlines()))
    weights = {r["metric"]: int(r["value"]) for r in rows if r["metric"].startswith("module.weights.")}
    assert weights["module.weights.0"] + weights["module.weights.2"] == trainer.run["weights"]
    times = {r["time"] for r in rows if r["metric"] == "used" and r["gpu"] == "0"}
    assert len(times) >= 8  # a sample every 0.5 s for 6 s, the first after the host's first frame
    buckets = [float(r["time"]) for r in rows if r["metric"] == "agent.cpu.bucket.weights"]
    assert len(buckets) >= len(times) - 1  # the agent's samples (every 0.5 s too) at their own times
    assert buckets == sorted(set(buckets))


def test_record_host_keeps_every_agent_sample_between_its_frames(hosts, trainer, tmp_path):
    """Frames every 2 s, the host's agent sampling every 0.5 s: the recording holds the
    agent's samples at their own times, about four a frame, not one."""
    out = tmp_path / "trainer.vramscope"
    done = vramscope(
        hosts, "record", "--host", "trainer", "--interval", "2", "--duration", "10", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    exported = vramscope(hosts, "export", str(out), "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(out.with_suffix(".csv").read_text().splitlines()))
    frames = sorted({float(r["time"]) for r in rows if r["metric"] == "used" and r["gpu"] == "0"})
    samples = [float(r["time"]) for r in rows if r["metric"] == "agent.cpu.bucket.weights"]
    assert len(frames) >= 4
    assert samples == sorted(set(samples))
    assert len(samples) >= 3 * len(frames), (frames, samples)
    assert max(b - a for a, b in zip(samples, samples[1:])) < 1.5  # no frame's interval left out


def test_the_window_watching_a_host_reads_it_through_its_sampler_process(hosts, trainer, tmp_path):
    """`vramscope --host trainer`: the window's own sampler process runs the host's
    stream (so its rules and recording go on beside the window, as for this
    machine); the window shows the host's agent with its modules."""
    import psutil

    shots = tmp_path / "shots"
    window = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vramscope",
            "--host",
            "trainer",
            "--shots",
            str(shots),
            "--shots-after",
            "12",
        ],
        env={**hosts.env(), "QT_QPA_PLATFORM": "offscreen"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def command(process) -> list[str]:
        try:
            return process.cmdline()
        except psutil.Error:  # (a short-lived child gone meanwhile)
            return []

    samplers: list[list[str]] = []
    deadline = time.monotonic() + 10
    while not samplers and time.monotonic() < deadline:
        try:
            samplers = [c for c in map(command, psutil.Process(window.pid).children()) if "stream" in c]
        except psutil.Error:
            break
        time.sleep(0.2)
    out, err = window.communicate(timeout=90)
    no_traceback(out, err)
    assert window.returncode == 0, err[-2000:]
    assert samplers and "--host" in samplers[0]  # the host is read by the sampler child
    shown = json.loads((shots / "shown.json").read_text())
    (agent,) = [a for a in shown["agents"] if a["pid"] == trainer.pid]
    assert "Modules" in agent["details"] and agent["modules"] > 0
