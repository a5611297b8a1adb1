"""MIG through the REAL pynvml against the fake driver, which models MIG as
nvml.h specifies it: MIG device handles by index under a parent (with empty
indices), the parent from a slice handle, instance ids, per-slice memory and
processes, utilisation not supported on slices."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from fakenvml import GiB, FakeGpu, FakeMigDevice, FakeProcess, FakeState
from vramscope.core.status.status_report import frame_to_dict
from vramscope.core.status.status_table import render_table
from vramscope.sources.nvml.nvml_source import NvmlSource
from vramscope.sources.nvml.nvml_mig import profile_from_name


def lab_server(pids: list[int]) -> FakeState:
    """An H100 split in three slices (one idle), beside an ordinary GPU."""
    a, b, c = pids
    return FakeState(
        gpus=[
            FakeGpu(
                name="NVIDIA H100 80GB HBM3",
                total=80 * GiB,
                used=35 * GiB,
                mig=True,
                mig_devices=[
                    FakeMigDevice(
                        "3g.40gb",
                        gi=1,
                        ci=0,
                        total=40 * GiB,
                        used=20 * GiB,
                        processes=[FakeProcess(a, 18 * GiB, sm=60)],
                    ),
                    FakeMigDevice(
                        "2g.20gb",
                        gi=5,
                        ci=0,
                        total=20 * GiB,
                        used=15 * GiB,
                        processes=[FakeProcess(b, 14 * GiB)],
                    ),
                    FakeMigDevice("1g.10gb", gi=13, ci=0, total=10 * GiB, used=0),
                ],
            ),
            FakeGpu(name="NVIDIA GeForce RTX 4090", mig=None, processes=[FakeProcess(c, 3 * GiB, sm=20)]),
        ]
    )


@pytest.fixture
def source(fake_nvml):
    src = NvmlSource(retry_interval=5.0)
    yield src
    src.close()


def test_a_mig_gpu_is_shown_as_its_slices(fake_nvml, source, sleepers):
    a, b, c = sleepers(3)
    fake_nvml.write(lab_server([a, b, c]))
    frame = source.sample(time.time())
    h100, rtx = frame.gpus
    assert h100.mig_mode is True and rtx.mig_mode is None
    assert [s.profile for s in h100.slices] == ["3g.40gb", "2g.20gb", "1g.10gb"]  # by instance id
    big, mid, small = h100.slices
    assert (big.gpu_instance_id, big.compute_instance_id) == (1, 0)
    assert big.uuid.startswith("MIG-") and big.uuid != mid.uuid
    assert (big.total, big.used) == (40 * GiB, 20 * GiB)
    # each slice has its own processes, and the parent lists each once, tagged with its slice
    assert [p.pid for p in big.processes] == [a]
    assert [p.pid for p in mid.processes] == [b]
    assert small.processes == ()
    assert sorted(p.pid for p in h100.processes) == sorted([a, b])
    assert h100.slice_of(next(p for p in h100.processes if p.pid == b)) is mid
    assert rtx.slices == () and rtx.processes[0].mig_uuid is None


def test_per_process_sm_on_mig_is_not_available_never_zero(fake_nvml, source, sleepers):
    pids = sleepers(3)
    fake_nvml.write(lab_server(pids))
    for _ in range(2):
        frame = source.sample(time.time())
    h100, rtx = frame.gpus
    assert all(p.sm is None for p in h100.processes)  # NVML gives none on MIG
    assert h100.util_gpu is None
    assert rtx.processes[0].sm == 20  # the ordinary GPU still reports


def test_mig_disabled_is_said_and_has_no_slices(fake_nvml, source, sleepers):
    (a,) = sleepers(1)
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(name="NVIDIA A100-SXM4-80GB", mig=False, processes=[FakeProcess(a, 5 * GiB, sm=10)])
            ]
        )
    )
    gpu = source.sample(time.time()).gpus[0]
    assert gpu.mig_mode is False and gpu.slices == ()
    assert gpu.processes[0].used == 5 * GiB


def test_reconfigured_slices_are_picked_up(fake_nvml, source, sleepers):
    pids = sleepers(3)
    state = lab_server(pids)
    fake_nvml.write(state)
    assert len(source.sample(time.time()).gpus[0].slices) == 3
    state.gpus[0].mig_devices = [FakeMigDevice("7g.80gb", gi=0, ci=0, total=80 * GiB, used=1 * GiB)]
    fake_nvml.write(state)
    time.sleep(0.01)
    slices = source.sample(time.time()).gpus[0].slices
    assert [s.profile for s in slices] == ["7g.80gb"]


def test_pynvml_mig_calls_follow_nvml_h(fake_nvml, sleepers):
    """The fake answers as nvml.h says, through the real bindings."""
    import pynvml

    fake_nvml.write(lab_server(sleepers(3)))
    pynvml.nvmlInit()
    try:
        parent = pynvml.nvmlDeviceGetHandleByIndex(0)
        assert pynvml.nvmlDeviceGetMigMode(parent)[0] == pynvml.NVML_DEVICE_MIG_ENABLE
        count = pynvml.nvmlDeviceGetMaxMigDeviceCount(parent)
        handles = []
        for i in range(count):
            try:
                handles.append(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(parent, i))
            except pynvml.NVMLError_NotFound:
                continue
        assert len(handles) == 3
        mig = handles[0]
        assert pynvml.nvmlDeviceIsMigDeviceHandle(mig).value == 1
        back = pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)
        assert pynvml.nvmlDeviceGetUUID(back) == pynvml.nvmlDeviceGetUUID(parent)
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetGpuInstanceId(parent)
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetProcessUtilization(mig, 0)
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetMigMode(pynvml.nvmlDeviceGetHandleByIndex(1))
        # the parent's aggregate list carries the instance ids
        infos = pynvml.nvmlDeviceGetComputeRunningProcesses(parent)
        assert sorted(i.gpuInstanceId for i in infos) == [1, 5]
    finally:
        pynvml.nvmlShutdown()


def test_status_json_nests_slices_under_their_gpu(fake_nvml_files, sleepers):
    a, b, c = sleepers(3)
    fake_nvml_files.write(lab_server([a, b, c]))
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--json"],
        env=fake_nvml_files.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    h100 = json.loads(r.stdout)["gpus"][0]
    assert h100["mig_mode"] is True
    slices = {s["profile"]: s for s in h100["mig_slices"]}
    assert set(slices) == {"3g.40gb", "2g.20gb", "1g.10gb"}
    assert slices["2g.20gb"]["memory"] == {"total": 20 * GiB, "used": 15 * GiB, "free": 5 * GiB}
    assert [p["pid"] for p in slices["2g.20gb"]["processes"]] == [b]
    assert slices["2g.20gb"]["processes"][0]["sm"] is None
    assert slices["1g.10gb"]["processes"] == []


def test_status_table_names_the_slices(fake_nvml, source, sleepers):
    fake_nvml.write(lab_server(sleepers(3)))
    text = render_table(source.sample(time.time()))
    assert "MIG mode: 3 slices" in text
    assert "per-process SM % is not available on MIG" in text
    assert "3g.40gb  GI 1 CI 0" in text
    assert "MIG 2g.20gb" in text  # on the process row
    doc = frame_to_dict(source.sample(time.time()))
    assert doc["gpus"][1]["mig_slices"] == []


@pytest.mark.parametrize(
    "name, profile",
    [
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "1g.5gb"),
        ("NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb", "1c.3g.40gb"),
        ("NVIDIA GeForce RTX 4090", None),
        (None, None),
    ],
)
def test_profile_is_read_from_the_mig_device_name(name, profile):
    assert profile_from_name(name) == profile


def test_the_planner_judges_fit_against_each_slice(fake_nvml, source, sleepers):
    from vramscope.core.planner.targets import fit_targets

    fake_nvml.write(lab_server(sleepers(3)))
    targets = dict(fit_targets(source.sample(time.time())))
    assert targets == {
        "GPU 0 MIG 3g.40gb": 40 * GiB,
        "GPU 0 MIG 2g.20gb": 20 * GiB,
        "GPU 0 MIG 1g.10gb": 10 * GiB,
        "GPU 1: NVIDIA GeForce RTX 4090": 24 * GiB,
    }  # never the whole 80 GiB card


def test_plan_command_on_a_mig_server_says_which_slices_fit(fake_nvml_files, sleepers):
    fake_nvml_files.write(lab_server(sleepers(3)))
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "plan", "--params", "7B", "--mode", "infer", "--json"],
        env=fake_nvml_files.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    fits = {g["name"]: g["fits"] for g in doc["gpus"]}
    assert fits["GPU 0 MIG 3g.40gb"] is True  # 7B in bf16 is ~14 GB
    assert fits["GPU 0 MIG 1g.10gb"] is False


def test_slices_travel_over_the_stream(fake_nvml, source, sleepers):
    """`vramscope --host` reads a MIG server's slices as a local one would."""
    from vramscope.core.stream.codec import frame_from_wire, frame_to_wire

    fake_nvml.write(lab_server(sleepers(3)))
    frame = source.sample(time.time())
    back = frame_from_wire(json.loads(json.dumps(frame_to_wire(frame))))
    assert back.gpus[0].slices == frame.gpus[0].slices
    assert [p.mig_uuid for p in back.gpus[0].processes] == [p.mig_uuid for p in frame.gpus[0].processes]
