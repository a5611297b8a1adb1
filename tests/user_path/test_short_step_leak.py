"""Issue 47 item 2 on the user's path: on 2 ms steps the agent's CPU budget reads
"allocated after the step" on a share of the steps only (one allocator read is ~1 % of
such a step by itself; bench/README). The leak rule counts by the step numbers the
readings carry, so a leak there is still flagged, at its own rate: a real training
loop keeping 2 MiB a step, its agent's socket, `vramscope status --watch` as a user runs
it (NVML through the fake library listing the loop's PID)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakenvml import FakeGpu, FakeProcess, FakeState, GiB, MiB
from user_path.helpers import no_traceback

CHILD = Path(__file__).resolve().parent / "short_step_leak_train.py"
ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def test_a_leak_on_2_ms_steps_is_flagged_at_its_rate_from_the_steps_read(tmp_path, fake_nvml_files):
    runtime = Path(os.environ["VRAMSCOPE_RUNTIME_DIR"])
    out, release, err = tmp_path / "run.json", tmp_path / "release", tmp_path / "training.err"
    env = dict(os.environ, CPU_TRAIN_WAIT=str(release), PYTHONPATH=str(ROOT))
    with open(err, "w") as stderr:
        child = subprocess.Popen([sys.executable, str(CHILD), str(out)], env=env, stderr=stderr)
    try:
        deadline = time.monotonic() + 60
        while not any(runtime.glob(f"*{child.pid}*")):  # its agent's socket: training
            assert child.poll() is None and time.monotonic() < deadline, err.read_text()[-2000:]
            time.sleep(0.05)
        fake_nvml_files.write(
            FakeState(gpus=[FakeGpu(used=4 * GiB, processes=[FakeProcess(child.pid, 3 * GiB, sm=90)])])
        )
        status = subprocess.run(
            [sys.executable, "-m", "vramscope", "status", "--json", "--watch", "8", "--interval", "0.5"],
            env=fake_nvml_files.env(dict(os.environ)),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        release.touch()
        try:
            child.wait(60)
        except subprocess.TimeoutExpired:
            child.kill()
    no_traceback(status.stdout, status.stderr, err.read_text())
    assert status.returncode == 0, status.stderr
    run = json.loads(out.read_text())
    share = run["read"] / max(1, run["span"])
    said = f"{run['cpu_step_s'] * 1e3:.1f} ms steps, after-step readings on {share:.1%} of them"
    leaks = [a for a in json.loads(status.stdout)["alerts"] if a["kind"] == "leak" and a["pid"] == child.pid]
    assert leaks, said
    rate = leaks[0]["data"]["slope_bytes_per_step"]
    assert 1.8 * MiB <= rate <= 2.2 * MiB, (rate / MiB, said)
    print(said)
