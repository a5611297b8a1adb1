"""`vramscope run -- python script.py`: the agent in an unmodified script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vramscope.core.samples import Frame
from vramscope.sources.agents.agent_client import AgentClient

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "cpu_train.py"
VRAMSCOPE = [sys.executable, "-m", "vramscope"]

pytestmark = pytest.mark.timeout(120)


@pytest.mark.slow
def test_an_unmodified_script_appears_within_two_seconds_with_its_real_sizes_and_steps(tmp_path, runtime_dir):
    out = tmp_path / "run.json"
    release = tmp_path / "release"
    env = dict(os.environ, CPU_TRAIN_WAIT=str(release), CPU_TRAIN_EXIT="3")
    proc = subprocess.Popen(
        VRAMSCOPE + ["run", "--", sys.executable, str(SCRIPT), str(out), "25", "0.02"], env=env
    )
    client = AgentClient()
    first_seen = None
    report = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            frame = client(Frame(time=time.time()))
            if frame.agents and first_seen is None:
                first_seen = time.time()
            if out.exists():
                real = json.loads(out.read_text())
                mine = [r for r in frame.agents if r.pid == real["pid"]]
                if mine and real["steps_done"] == 25 and mine[0].step == 25:
                    report = mine[0]
                    break
            time.sleep(0.05)
        assert report is not None, "the run never showed up with its 25 steps"
        assert first_seen - real["t_import"] < 2.0  # from `import torch` done to visible
        cpu = {d.device: d for d in report.devices}["cpu"]
        assert (cpu.buckets.weights, cpu.buckets.gradients, cpu.buckets.optimizer_state) == (
            real["weights"],
            real["gradients"],
            real["optimizer_state"],
        )
        assert cpu.buckets.optimizer_state > 2 * cpu.buckets.weights  # Adam: 2 x + step counters
    finally:
        release.touch()
        rc = proc.wait(30)
    assert rc == 3  # the child's exit code comes back


@pytest.mark.slow
def test_an_existing_sitecustomize_still_runs_and_non_torch_children_stay_torch_free(tmp_path, runtime_dir):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    marker = tmp_path / "marker"
    (theirs / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = dict(os.environ, PYTHONPATH=str(theirs))
    code = (
        "import sys; print('torch' in sys.modules); import torch, vramscope.agent as a; "
        "print(a.get() is not None)"
    )
    r = subprocess.run(
        VRAMSCOPE + ["run", "--", sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]  # no torch before the script asks; agent after
    assert marker.read_text() == "ran"


@pytest.mark.slow
def test_run_without_a_command_explains_itself():
    r = subprocess.run(VRAMSCOPE + ["run"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no command" in r.stderr
    r = subprocess.run(
        VRAMSCOPE + ["run", "--", "/nonexistent/cmd"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 127 and "not found" in r.stderr


@pytest.mark.slow
def test_multiprocessing_helpers_and_launchers_get_no_agent(tmp_path, runtime_dir):
    code = r"""
import multiprocessing as mp, sys
def child(q):
    import torch, vramscope.agent as a
    q.put(a.get() is None)
if __name__ == "__main__":
    import torch, vramscope.agent as a
    ctx = mp.get_context("spawn"); q = ctx.Queue(); p = ctx.Process(target=child, args=(q,)); p.start()
    print(a.get() is not None, q.get(timeout=60)); p.join()
"""
    script = tmp_path / "mp.py"
    script.write_text(code)
    r = subprocess.run(
        VRAMSCOPE + ["run", "--", sys.executable, str(script)], capture_output=True, text=True, timeout=90
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]  # the script has an agent, its spawn worker none


@pytest.mark.slow
def test_a_head_loaded_whole_late_reads_na_in_status_then_its_gradients_count(tmp_path, runtime_dir):
    """Under `vramscope run`, a head loaded with torch.load after the first backwards and
    summed into the known model's loss: `vramscope status --json` says gradients n/a with
    the reason while the agent has not met it (it showed the first model's alone), and
    the exact total once its next forward has been seen."""
    proc = subprocess.Popen(
        VRAMSCOPE + ["run", "--", sys.executable, str(HERE / "late_head_train.py"), str(tmp_path)]
    )
    try:
        deadline = time.monotonic() + 120  # (a first torch import on a cold, loaded box is slow)
        while not (tmp_path / "paused").exists() and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.05)
        assert (tmp_path / "paused").exists(), "the loop never reached its pause"
        time.sleep(0.5)  # (an agent-thread sample after the step)
        status = subprocess.run(VRAMSCOPE + ["status", "--json"], capture_output=True, text=True, timeout=120)
        pid = int((tmp_path / "paused").read_text())
        agents = [a for a in json.loads(status.stdout)["agents"] if a["pid"] == pid]
        assert "Traceback" not in status.stderr
        (cpu,) = [d for d in agents[0]["devices"] if d["device"] == "cpu"]
        assert cpu["buckets"]["gradients"] is None
        assert "has not met yet" in cpu["buckets_note"]
        (tmp_path / "release").touch()
        real, shown, client = None, None, AgentClient()
        deadline = time.monotonic() + 60  # (from the release: status above may take a while on a loaded box)
        while time.monotonic() < deadline:
            if (tmp_path / "real.json").exists():
                real = json.loads((tmp_path / "real.json").read_text())
                mine = [r for r in client(Frame(time=time.time())).agents if r.pid == real["pid"]]
                shown = mine and {d.device: d for d in mine[0].devices}["cpu"]
                if shown and shown.buckets.gradients == real["gradients"]:
                    break
            time.sleep(0.1)
        assert real is not None and shown, (real, shown)
        assert shown.buckets.gradients == real["gradients"], (shown.buckets, real)
    finally:
        (tmp_path / "release").touch()
        (tmp_path / "done").touch()
        rc = proc.wait(30)
    assert rc == 0
