"""A broken or hostile agent -- wrong types, NaN and infinities, strings for
numbers, deep nesting, in every kind of item -- is another process's input: a
recording beside it goes on, loses no sample of the GPUs, prints no traceback
and exits 0 (its items are dropped with a reason, the agent is kept)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, subprocess_env, write_state
from user_path.helpers import no_traceback
from vramscope.core.session import open_session

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_a_recording_beside_a_hostile_agent_goes_on_whole(tmp_path, fake_nvml_build):
    ready = tmp_path / "ready"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"))
    agent = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("hostile_agent.py")), str(ready)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert agent.poll() is None and time.monotonic() < deadline, agent.stderr.read()
            time.sleep(0.05)
        state = tmp_path / "nvml.txt"
        write_state(
            state, FakeState(gpus=[FakeGpu(used=8 * GiB, processes=[FakeProcess(agent.pid, 6 * GiB, sm=30)])])
        )
        out = tmp_path / "hostile.vramscope"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "vramscope",
                "record",
                "--interval",
                "0.5",
                "--duration",
                "5",
                "--out",
                str(out),
            ],
            env=subprocess_env(fake_nvml_build().parent, state),
            capture_output=True,
            text=True,
            timeout=90,
        )
    finally:
        ready.unlink(missing_ok=True)
        agent.wait(10)
    no_traceback(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    assert "failure" not in done.stderr and "could not be written" not in done.stderr
    with open_session(out) as session:
        assert not session.problems
        assert len(session.samples.gpu_columns()) >= 8  # a GPU sample every 0.5 s for 5 s
        assert agent.pid in {record.pid for record in session.processes().values()}
