"""`vramscope status [--json] [--demo]` as a user runs it: a child process
whose LD_LIBRARY_PATH points at the fake libnvidia-ml.so.1."""

from __future__ import annotations

import ctypes.util
import json
import subprocess
import sys
import textwrap

import psutil
import pytest

from fakenvml import GiB, MiB, FakeGpu, FakeProcess, FakeState, gone_pid, subprocess_env
from vramscope.core.processes.process_text import VISIBILITY_COMMAND
from vramscope.core.samples import (
    BUCKET_LABELS,
    GHOST,
    NOT_VISIBLE,
    AgentBuckets,
    AgentDevice,
    AgentEvent,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
    ProcessInfo,
)
from vramscope.core.status.status_report import frame_to_dict
from vramscope.core.status.status_table import render_table
from vramscope.sources.machine.containers import host_pid_view, proc_hides_pids, read_container


def status(env, *args, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "vramscope", "status", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def missing_pid_visibility() -> str:
    """How a PID without a /proc entry is shown here: a ghost where this test
    sees the host's PIDs, 'not visible' inside a container's PID namespace."""
    return GHOST if host_pid_view() and not proc_hides_pids() else NOT_VISIBLE


def expected_gpus(state: FakeState, memory_v2_symbol: bool = True) -> list[dict]:
    """What `status --json` must say about each GPU of a state file, derived
    from the file and from psutil for the real PIDs in it."""
    out = []
    for i, g in enumerate(state.gpus):
        if g.lost:  # lost from the start: nothing is known but the error
            out.append(
                {
                    "index": i,
                    "name": None,
                    "uuid": None,
                    "pci_bus_id": None,
                    "memory": dict.fromkeys(("total", "used", "free", "reserved")),
                    "utilization": {"gpu": None, "memory": None},
                    "temperature": None,
                    "power": {"usage_w": None, "limit_w": None},
                    "error": "GPU is lost",
                    "asleep": False,
                    "processes": [],
                    "mig_mode": None,
                    "mig_slices": [],
                    "vendor": "NVIDIA",
                    "memory_kind": None,
                    "not_reported": {},
                }
            )
            continue
        v2 = memory_v2_symbol and g.memory_v2 == "yes"
        merged: dict[int, dict] = {}
        for p in g.processes:
            e = merged.setdefault(p.pid, {"used": p.used, "kinds": [], "sm": None})
            if p.used is not None and (e["used"] is None or p.used > e["used"]):
                e["used"] = p.used
            if p.kind not in e["kinds"]:
                e["kinds"].append(p.kind)
            if e["sm"] is None and p.sm is not None:
                e["sm"] = p.sm
        procs = []
        for pid, e in merged.items():
            try:
                real = psutil.Process(pid)
                user, command, start = real.username(), " ".join(real.cmdline()), real.create_time()
                visibility = "ok"
            except psutil.NoSuchProcess:
                user = command = start = None
                visibility = missing_pid_visibility()
            container, ns_pid = read_container(pid)
            procs.append(
                {
                    "pid": pid,
                    "used": e["used"],
                    "sm": (e["sm"] or 0) if g.process_utilization else None,
                    "user": user,
                    "command": command,
                    "start_time": start,
                    "kinds": e["kinds"],
                    "visibility": visibility,
                    "agent": False,
                    "container": container.as_dict() if container else None,
                    "ns_pid": ns_pid,
                    "slurm": None,  # the test's sleepers run in no Slurm job
                    "mig_uuid": None,
                }
            )
        out.append(
            {
                "index": i,
                "name": g.name,
                "uuid": state.gpu_uuid(i),
                "pci_bus_id": state.gpu_pci(i),
                "memory": {
                    "total": g.total,
                    "used": g.used if v2 else g.used + g.reserved,
                    "free": g.free_bytes(),
                    "reserved": g.reserved if v2 else None,
                },
                "utilization": {
                    "gpu": g.utilization[0] if g.utilization else None,
                    "memory": g.utilization[1] if g.utilization else None,
                },
                "temperature": g.temperature,
                "power": {
                    "usage_w": None if g.power_mw is None else g.power_mw / 1000,
                    "limit_w": None if g.power_limit_mw is None else g.power_limit_mw / 1000,
                },
                "error": None,
                "asleep": False,
                "processes": procs,
                "mig_mode": g.mig,
                "mig_slices": [],
                "vendor": "NVIDIA",
                "memory_kind": None,
                "not_reported": {},
            }
        )
    return out


def workstation(pids: list[int]) -> FakeState:
    a, b, c = pids
    return FakeState(
        driver_version="550.54.14",
        cuda_driver_version=12040,
        gpus=[
            FakeGpu(
                name="NVIDIA GeForce RTX 4090",
                total=24 * GiB,
                reserved=312 * MiB,
                used=13 * GiB,
                utilization=(87, 40),
                temperature=66,
                power_mw=281_250,
                power_limit_mw=450_000,
                processes=[
                    FakeProcess(a, 10 * GiB, sm=85),
                    FakeProcess(b, None, "compute"),  # n/a (WDDM-like)
                    FakeProcess(c, 200 * MiB, "compute"),
                    FakeProcess(c, 300 * MiB, "graphics", sm=3),
                    FakeProcess(gone_pid(), 2 * GiB),
                ],
            ),
            FakeGpu(name="NVIDIA RTX A6000", total=48 * GiB, lost=True),
            FakeGpu(
                name="NVIDIA RTX A6000",
                total=48 * GiB,
                reserved=500 * MiB,
                used=20 * GiB,
                memory_v2="missing",
                utilization=None,
                temperature=None,
                power_mw=None,
                process_utilization=False,
                processes=[FakeProcess(a, 20 * GiB)],
            ),
        ],
    )


def test_status_json_matches_the_state_file(fake_nvml_files, sleepers):
    state = workstation(sleepers(3))
    fake_nvml_files.write(state)
    r = status(fake_nvml_files.env(), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["source"] == "nvml" and doc["simulated"] is False and doc["error"] is None
    assert doc["driver_version"] == "550.54.14" and doc["cuda_driver_version"] == "12.4"
    assert doc["gpus"] == expected_gpus(state)
    assert doc["agents"] == []
    ghost = missing_pid_visibility() == GHOST
    assert [a["kind"] for a in doc["alerts"]] == (["ghost"] if ghost else [])
    # n/a stays null, the lost GPU says so, the others still report
    assert doc["gpus"][0]["processes"][1]["used"] is None
    assert doc["gpus"][1]["error"] == "GPU is lost"
    assert doc["gpus"][2]["memory"]["used"] == 20 * GiB + 500 * MiB
    assert all(isinstance(v, int) for v in doc["gpus"][0]["memory"].values())


def test_status_json_on_a_driver_without_the_memory_v2_symbol(fake_nvml_build, fake_nvml_files, sleepers):
    lib = fake_nvml_build("no_memory_v2")
    state = workstation(sleepers(3))
    fake_nvml_files.write(state)
    r = status(subprocess_env(lib.parent, fake_nvml_files.state_path), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["gpus"] == expected_gpus(state, memory_v2_symbol=False)
    assert doc["gpus"][0]["memory"]["reserved"] is None


def test_status_table_is_readable(fake_nvml_files, sleepers):
    pids = sleepers(3)
    fake_nvml_files.write(workstation(pids))
    r = status(fake_nvml_files.env())
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "driver 550.54.14" in out and "CUDA 12.4" in out
    assert "GPU 0  NVIDIA GeForce RTX 4090  memory 13.0 GiB / 24.0 GiB (54 %)  reserved 312.0 MiB" in out
    assert "GPU 1  unknown GPU  ERROR: GPU is lost" in out
    row_a = next(line for line in out.splitlines() if line.split()[:1] == [str(pids[0])])
    assert "10.0 GiB" in row_a and "85 %" in row_a and "sleep 300" in row_a
    row_b = next(line for line in out.splitlines() if line.split()[:1] == [str(pids[1])])
    assert " n/a " in row_b  # n/a memory, not 0
    # the window's words for a process psutil cannot see, from the same place
    assert VISIBILITY_COMMAND[missing_pid_visibility()] in out and "[not-visible]" not in out


def _real_nvml_installed() -> bool:
    return ctypes.util.find_library("nvidia-ml") is not None


@pytest.mark.parametrize("as_json", [False, True])
def test_no_nvml_library_exit_2_and_one_line(tmp_path, as_json):
    if _real_nvml_installed():
        pytest.skip("a real libnvidia-ml is installed on this machine")
    empty = tmp_path / "nolib"
    empty.mkdir()
    r = status(subprocess_env(empty, None), *(["--json"] if as_json else []))
    assert r.returncode == 2
    assert r.stderr == (
        "vramscope status: NVIDIA driver not found: "
        "libnvidia-ml.so.1 could not be loaded (`vramscope status --demo` "
        "shows a simulated workstation)\n"
    )
    if as_json:  # a document a script can parse, with the error
        doc = json.loads(r.stdout)
        assert doc["error"].startswith("NVIDIA driver not found") and doc["gpus"] == []
    else:
        assert r.stdout == ""


def test_driver_not_loaded_exit_2(fake_nvml_files):
    fake_nvml_files.write(FakeState(driver_loaded=False, gpus=[FakeGpu()]))
    r = status(fake_nvml_files.env(), "--json")
    assert r.returncode == 2 and "driver not loaded" in json.loads(r.stdout)["error"].lower()
    assert len(r.stderr.splitlines()) == 1 and "driver not loaded" in r.stderr.lower()


def test_status_demo_without_any_gpu(tmp_path):
    empty = tmp_path / "nolib"
    empty.mkdir()
    r = status(subprocess_env(empty, None), "--demo", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["simulated"] is True and doc["source"] == "demo"
    assert len(doc["gpus"]) >= 1 and all(g["memory"]["total"] > 0 for g in doc["gpus"])
    r = status(subprocess_env(empty, None), "--demo")
    assert r.returncode == 0 and "SIMULATED DATA" in r.stdout


def test_status_runs_without_qt(fake_nvml_files):
    fake_nvml_files.write(FakeState(gpus=[FakeGpu()]))
    code = textwrap.dedent("""
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph'):
                    raise ImportError('Qt imported by status: ' + name)
        sys.meta_path.insert(0, Block())
        from vramscope.cli import main
        raise SystemExit(main(['status', '--json']))
    """)
    r = subprocess.run(
        [sys.executable, "-c", code], env=fake_nvml_files.env(), capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["gpus"][0]["name"] == "NVIDIA GeForce RTX 4090"


# -- the report itself ------------------------------------------------------------------------


def test_report_carries_agents_and_marks_their_processes():
    info = ProcessInfo(pid=4242, start_time=1700000000.5, user="alice", cmdline=("python", "train.py"))
    report = AgentReport(
        pid=4242,
        start_time=1700000000.5,
        rank=0,
        step=17,
        devices=(
            AgentDevice(
                device="cuda:0",
                allocated=6 * GiB,
                reserved=8 * GiB,
                inactive_split=300 * MiB,
                peak_allocated=7 * GiB,
                num_alloc_retries=2,
                num_ooms=0,
                buckets=AgentBuckets(
                    weights=2 * GiB,
                    gradients=2 * GiB,
                    optimizer_state=None,
                    other_allocated=GiB,
                    cached_free=2 * GiB,
                ),
            ),
            AgentDevice(device="cpu"),
        ),
        events=(AgentEvent(kind="step", time=1700000100.0, data={"step": 17}),),
    )
    frame = Frame(
        time=1700000200.0,
        gpus=(
            GpuSample(
                index=0,
                name="GPU",
                total=24 * GiB,
                used=9 * GiB,
                processes=(
                    GpuProcess(pid=4242, used=9 * GiB, info=info, has_agent=True),
                    GpuProcess(pid=77, used=None),
                ),
            ),
        ),
        agents=(report,),
    )
    doc = json.loads(json.dumps(frame_to_dict(frame, alerts=[{"kind": "squatter", "pid": 77}])))
    procs = doc["gpus"][0]["processes"]
    assert [p["agent"] for p in procs] == [True, False]
    assert procs[1]["used"] is None and procs[1]["user"] is None
    assert doc["alerts"] == [{"kind": "squatter", "pid": 77}]
    [agent] = doc["agents"]
    assert (agent["pid"], agent["start_time"], agent["rank"], agent["step"]) == (4242, 1700000000.5, 0, 17)
    cuda, cpu = agent["devices"]
    assert cuda.pop("allocator")["not_reported"]["free_split"]  # no snapshot yet: null, with why
    assert cuda == {
        "device": "cuda:0",
        "gpu": 0,
        "allocated": 6 * GiB,
        "reserved": 8 * GiB,
        "inactive_split": 300 * MiB,
        "peak_allocated": 7 * GiB,
        "num_alloc_retries": 2,
        "num_ooms": 0,
        "buckets": {
            "weights": 2 * GiB,
            "gradients": 2 * GiB,
            "optimizer_state": None,
            "other_allocated": GiB,
            "cached_free": 2 * GiB,
            "outside_pytorch": None,
        },
        "buckets_note": None,
        "runtime": None,
        "missing": [],
    }
    assert list(cuda["buckets"]) == list(BUCKET_LABELS)  # every bucket the window shows
    assert cpu["allocated"] is None and set(cpu["buckets"].values()) == {None}
    assert agent["events"] == [{"kind": "step", "time": 1700000100.0, "data": {"step": 17}}]
    table = render_table(frame)
    assert "(agent)" in table and "python train.py" in table
    # the table says what the JSON says about the agent: allocated vs reserved, the buckets
    assert "cuda:0 (GPU 0): allocated 6.0 GiB, reserved 8.0 GiB, peak 7.0 GiB, alloc retries 2" in table
    assert (
        "weights 2.0 GiB · gradients 2.0 GiB · activations + temporaries 1.0 GiB · "
        "cached, free (reserved − allocated) 2.0 GiB"
    ) in table
    assert "optimizer" not in table  # no data is not shown as 0


@pytest.mark.slow
def test_ctrl_c_on_status_watch_is_one_line_not_a_traceback():
    import signal
    import subprocess
    import sys
    import time

    p = subprocess.Popen(
        [sys.executable, "-m", "vramscope", "status", "--demo", "--watch", "60", "--interval", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(3)  # watching by now
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=30)
    assert p.returncode == 130
    assert err.strip() == "vramscope status: interrupted"
