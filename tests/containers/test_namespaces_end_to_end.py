"""`vramscope status` where PIDs cannot be trusted: run from inside a real PID
namespace (as a container without --pid=host), and beside a ghost PID."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .test_proc_reading import needs_unshare
from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, gone_pid
from vramscope.sources.machine.containers import host_pid_view, proc_hides_pids


def status_json(cmd_prefix, env):
    r = subprocess.run(
        [*cmd_prefix, sys.executable, "-m", "vramscope", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.slow
@needs_unshare
def test_inside_a_pid_namespace_the_cause_is_said_once_with_the_fix(fake_nvml_files, sleepers):
    a, b = sleepers(2)
    fake_nvml_files.write(
        FakeState(
            gpus=[
                FakeGpu(used=9 * GiB, processes=[FakeProcess(a, 6 * GiB), FakeProcess(b, 2 * GiB)]),
                FakeGpu(used=1 * GiB, processes=[FakeProcess(a, 1 * GiB)]),
            ]
        )
    )
    doc = status_json(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"], fake_nvml_files.env())
    assert doc["host_pids"] is False
    procs = [p for g in doc["gpus"] for p in g["processes"]]
    assert {p["visibility"] for p in procs} == {"not-visible"}
    notices = [x for x in doc["alerts"] if x["kind"] == "in_container"]
    assert len(notices) == 1  # once, not per process or per GPU
    assert "inside a container" in notices[0]["message"]
    assert "--pid=host" in notices[0]["fix"] and "hostPID: true" in notices[0]["fix"]
    assert not [x for x in doc["alerts"] if x["kind"] in ("ghost", "unattributed_memory")]


@pytest.mark.slow
@pytest.mark.skipif(
    not host_pid_view() or proc_hides_pids(),
    reason="this test runs without the host's full PID view (a container)",
)
def test_a_ghost_pid_is_flagged_with_how_to_find_the_holder(fake_nvml_files, sleepers):
    (a,) = sleepers(1)
    ghost = gone_pid()
    fake_nvml_files.write(
        FakeState(
            gpus=[FakeGpu(used=8 * GiB, processes=[FakeProcess(a, 2 * GiB), FakeProcess(ghost, 6 * GiB)])]
        )
    )
    doc = status_json([], fake_nvml_files.env())
    assert doc["host_pids"] is True
    by_pid = {p["pid"]: p for p in doc["gpus"][0]["processes"]}
    assert by_pid[ghost]["visibility"] == "no-such-process"
    assert by_pid[a]["visibility"] == "ok"
    [alert] = [x for x in doc["alerts"] if x["kind"] == "ghost"]
    assert alert["pid"] == ghost
    assert "The driver still holds 6.0 GiB on GPU 0 for a process that no longer exists" in alert["message"]
    assert "fuser -v /dev/nvidia*" in alert["fix"] and "lsof /dev/nvidia*" in alert["fix"]
    assert "--gpu-reset" in alert["fix"]  # the last resort
    assert not [x for x in doc["alerts"] if x["kind"] == "in_container"]
