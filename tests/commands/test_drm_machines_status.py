"""AMD and Intel machines as their drivers write them, through what a user runs:
`vramscope status --json` and `status` on an AMD APU running ROCm (no NVIDIA
driver), the stream the window reads and a recording, with hostile figures in
fdinfo, sysfs and KFD beside an NVIDIA card -- nothing refused, no traceback,
strict JSON."""

from __future__ import annotations

import json

import psutil
import pytest

from drm_trees import AMD_SLOT, APU_SLOT, Fd, Machine, MiB, amdgpu_fdinfo, lab, rtx_4090_beside, stage_apu
from kfd_trees import KfdNode, stage_kfd
from fakenvml import GiB, FakeState, gone_pid
from vramscope.cli import main
from vramscope.core.session import SessionReader
from vramscope.core.stream import protocol
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer
from vramscope.sources.drm import drm_fdinfo, drm_sysfs
from vramscope.sources.all_gpus import AllGpusSource

APU_GPU_ID = 4242


def strict_json(text: str) -> dict:
    def refuse(name):
        raise AssertionError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def status_json(capsys) -> dict:
    assert main(["status", "--json"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return strict_json(out.out)


@pytest.fixture
def apu_box(fake_nvml, tmp_path, sleepers, monkeypatch):
    """A Ryzen laptop: a Radeon 780M APU (KFD's topology says so), no NVIDIA driver; a
    PyTorch-on-ROCm run holding the render node and /dev/kfd, and a desktop client."""
    fake_nvml.write(FakeState(driver_loaded=False))
    rocm, desktop = sleepers(2)
    m = Machine(tmp_path / "machine")
    stage_apu(m)
    stage_kfd(
        m.root / "sys",
        [KfdNode(APU_GPU_ID, cpu_cores=16, simds=24, render_minor=128)],
        {rocm: {APU_GPU_ID: 256 * MiB}},
    )
    m.fds[rocm] = [
        Fd("renderD128", amdgpu_fdinfo(3, vram=256 * MiB, gtt=4 * GiB, pdev=APU_SLOT)),
        Fd("/dev/kfd", "pos:\t0\n"),
    ]
    m.fds[desktop] = [Fd("renderD128", amdgpu_fdinfo(4, vram=32 * MiB, gtt=64 * MiB, pdev=APU_SLOT))]
    m.stage_proc()
    monkeypatch.setattr(drm_fdinfo, "PROC", m.proc)
    monkeypatch.setattr(drm_sysfs, "SYS", m.sys)
    return rocm, desktop


def test_status_json_on_an_apu_running_rocm(apu_box, capsys):
    rocm, desktop = apu_box
    doc = status_json(capsys)
    assert doc["error"] is None and doc["source"] == "amdgpu"  # not "nvml" on this box
    (gpu,) = doc["gpus"]
    assert (gpu["vendor"], gpu["pci_bus_id"], gpu["memory_kind"]) == ("AMD", APU_SLOT, "unified")
    assert gpu["memory"]["total"] == psutil.virtual_memory().total + 512 * MiB  # not the carve-out alone
    assert gpu["memory"]["used"] == 300 * MiB + 6 * GiB
    assert "APU" in gpu["not_reported"]["total"]
    assert gpu["utilization"]["memory"] == 4  # mem_busy_percent
    procs = {p["pid"]: p for p in gpu["processes"]}
    assert procs[rocm]["used"] == 256 * MiB + 4 * GiB  # carve-out + GTT, KFD's VRAM not again
    assert procs[desktop]["used"] == 96 * MiB
    assert "ROCm" in gpu["not_reported"]["process_sm"]
    assert main(["status"]) == 0
    out = capsys.readouterr()
    assert "GPU 0" in out.out and "Traceback" not in out.err


@pytest.fixture
def hostile(fake_nvml, tmp_path, sleepers, monkeypatch):
    """The lab machine beside an NVIDIA card, with a 40-digit KiB figure in one
    process's fdinfo, a 4,000-digit hwmon temperature and a 50-digit KFD figure."""
    pids = sleepers(4)
    m = lab(tmp_path / "machine", *pids, gone_pid())
    both = pids[1]
    (m.root / "proc" / str(both) / "fdinfo" / "4").write_text(
        amdgpu_fdinfo(9, vram=2 * GiB).replace(
            f"drm-resident-vram:\t{2 * GiB // 1024} KiB", f"drm-resident-vram:\t{'9' * 40} KiB"
        )
    )
    hwmon = m.root / "sys" / "class" / "drm" / "card1" / "device" / "hwmon" / "hwmon3"
    (hwmon / "temp1_input").write_text("4" * 4000 + "\n")
    (hwmon / "power1_average").write_text("7" * 4000 + "\n")
    stage_kfd(m.root / "sys", [KfdNode(77, simds=192, render_minor=129)], {pids[0]: {77: "5" * 50}})
    monkeypatch.setattr(drm_fdinfo, "PROC", m.proc)
    monkeypatch.setattr(drm_sysfs, "SYS", m.sys)
    rtx_4090_beside(fake_nvml, both)
    return pids


def test_status_json_with_implausible_figures_says_so_and_keeps_every_gpu(hostile, capsys):
    both = hostile[1]
    doc = status_json(capsys)
    nvidia, amd, intel = doc["gpus"]
    assert doc["source"] == "nvml + amdgpu + xe"
    assert {p["pid"]: p["used"] for p in nvidia["processes"]} == {both: 3 * GiB}
    assert amd["temperature"] is None and "implausible" in amd["not_reported"]["temperature"]
    assert amd["power"]["usage_w"] is None and "implausible" in amd["not_reported"]["power_w"]
    shown = {p["pid"]: p["used"] for p in amd["processes"]}
    assert shown[both] is None and "implausible" in amd["not_reported"]["process_memory"]
    assert all(v is None or v < 1 << 50 for g in doc["gpus"] for v in [g["memory"]["used"]])
    assert intel["processes"]
    assert main(["status"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "GPU 1" in out.out


def test_the_stream_the_window_reads_carries_the_frame_whole(hostile):
    source = AllGpusSource()
    try:
        frame = source.sample(1000.0)
    finally:
        source.close()
    message = json.loads(protocol.encode(FrameDiffer().message(frame, [])))
    got, _alerts = FrameAssembler().whole(message)
    assert [g.vendor for g in got.gpus] == ["NVIDIA", "AMD", "Intel"]
    assert got.source == "nvml + amdgpu + xe"
    amd = got.gpus[1]
    assert amd.pci_bus_id == AMD_SLOT and amd.temperature is None
    assert {p.pid: p.used for p in amd.processes} == {p.pid: p.used for p in frame.gpus[1].processes}


@pytest.mark.slow
def test_a_recording_with_implausible_figures_goes_on(hostile, tmp_path, capsys):
    out = tmp_path / "hostile.vramscope"
    assert main(["record", "--out", str(out), "--duration", "1.5", "--interval", "0.5"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    with SessionReader(out) as reader:
        frame = reader.latest_frame()
    nvidia, amd, _intel = frame.gpus
    assert nvidia.used == 5 * GiB
    assert amd.temperature is None and amd.power_w is None
    assert {p.pid: p.used for p in amd.processes}[hostile[1]] is None


@pytest.mark.slow
def test_a_recording_on_an_apu_keeps_it_unified_with_its_rocm_process(apu_box, tmp_path):
    rocm, _desktop = apu_box
    out = tmp_path / "apu.vramscope"
    assert main(["record", "--out", str(out), "--duration", "1.5", "--interval", "0.5"]) == 0
    with SessionReader(out) as reader:
        frame = reader.latest_frame()
    (gpu,) = frame.gpus
    assert gpu.unified and gpu.vendor == "AMD" and gpu.total == psutil.virtual_memory().total + 512 * MiB
    assert {p.pid: p.used for p in gpu.processes}[rocm] == 256 * MiB + 4 * GiB
