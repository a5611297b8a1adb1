"""SIGKILL the headless recorder mid-write: the file opens and keeps all but the last ~2 s."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from vramscope.core.export import export_csv, export_trace
from vramscope.core.session import load_into_store, open_session


def _start_record(out, *extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "vramscope", "record", "--demo", "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_started(proc, out, timeout=30.0):
    """Until the recorder said where it records and the first pass is in the file."""
    line = proc.stdout.readline()
    assert f"recording to {out}" in line, line + proc.stderr.read()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open_session(out) as r:
                if r.span() is not None:
                    return time.monotonic()
        except Exception:  # noqa: BLE001 - not created yet
            pass
        time.sleep(0.05)
    raise AssertionError("the recorder wrote no sample")


@pytest.mark.slow
def test_sigkill_at_second_6_leaves_a_session_that_reopens_and_exports(tmp_path):
    """Done-when of issue 5: `record --duration 10` killed at second 6."""
    out = tmp_path / "killed.vramscope"
    proc = _start_record(out, "--duration", "10", "--interval", "1")
    started = _wait_started(proc, out)
    time.sleep(max(0.0, started + 6.0 - time.monotonic()))
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    with open_session(out, strict=True) as r:
        t0, t1 = r.span()
        assert t1 - t0 >= 4.0, f"only {t1 - t0:.1f} s survived the kill"
        assert not r.problems
        store = load_into_store(r)
        assert store.latest is not None and store.latest.time == t1
        assert store.latest.simulated  # the demo stays marked as such after reopening
        export_csv(r, tmp_path / "k.csv")
        export_trace(r, tmp_path / "k.json")
    rows = list(csv.DictReader(open(tmp_path / "k.csv")))
    assert max(float(x["time"]) for x in rows) - t0 >= 4.0
    trace = json.load(open(tmp_path / "k.json"))
    last_ts = max(e["ts"] for e in trace["traceEvents"] if e["ph"] == "C")
    assert last_ts >= 4_000_000


@pytest.mark.slow
def test_sigkill_while_writing_fast_loses_at_most_two_seconds(tmp_path):
    out = tmp_path / "fast.vramscope"
    proc = _start_record(out, "--interval", "0.1")
    started = _wait_started(proc, out)
    time.sleep(3.0)
    killed_at = time.time()
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    with open_session(out, strict=True) as r:
        t0, t1 = r.span()
        assert killed_at - t1 <= 2.0
        assert len(r) >= 15  # ~10 passes a second were committed up to the kill
        assert r.latest_frame().gpus
    assert started


@pytest.mark.slow
def test_sigterm_and_ctrl_c_end_cleanly(tmp_path):
    for sig in (signal.SIGTERM, signal.SIGINT):
        out = tmp_path / f"stop-{sig}.vramscope"
        proc = _start_record(out)
        _wait_started(proc, out)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=20)
        assert proc.returncode == 0, stderr
        assert "recorded" in stdout
        # a clean end checkpoints into one file: no WAL left behind
        assert not (tmp_path / (out.name + "-wal")).exists()
        with open_session(out, strict=True) as r:
            assert r.span() is not None
        assert os.stat(out).st_mode & 0o777 == 0o600


@pytest.mark.slow
def test_sigkill_against_the_fake_nvml_library(tmp_path, fake_nvml_files, sleepers):
    """Done-when, against the fake libnvidia-ml.so.1: real pynvml, a real PID on the GPU."""
    from fakenvml import GiB, FakeGpu, FakeProcess, FakeState

    (pid,) = sleepers(1)
    fake_nvml_files.write(
        FakeState(gpus=[FakeGpu(used=5 * GiB, processes=[FakeProcess(pid=pid, used=2 * GiB, sm=35)])])
    )
    out = tmp_path / "nvml.vramscope"
    env = fake_nvml_files.env(dict(os.environ, PYTHONUNBUFFERED="1"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "vramscope", "record", "--out", str(out), "--duration", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    started = _wait_started(proc, out)
    time.sleep(max(0.0, started + 6.0 - time.monotonic()))
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    with open_session(out, strict=True) as r:
        t0, t1 = r.span()
        assert t1 - t0 >= 4.0
        assert not r.simulated
        last = load_into_store(r).latest
        (gpu,) = last.gpus
        assert gpu.used == 5 * GiB and gpu.name == "NVIDIA GeForce RTX 4090"
        (p,) = [p for p in gpu.processes if p.pid == pid]
        assert p.used == 2 * GiB and p.sm == 35 and p.info.start_time is not None
        export_csv(r, tmp_path / "n.csv")
        export_trace(r, tmp_path / "n.json")
    rows = list(csv.DictReader(open(tmp_path / "n.csv")))
    assert {(x["pid"], x["value"]) for x in rows if x["metric"] == "used" and x["pid"]} == {
        (str(pid), str(2 * GiB))
    }
