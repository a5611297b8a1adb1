"""Every GPU of the machine end to end: an NVIDIA card from the fake NVML beside
an AMD and an Intel card from staged /proc fdinfo and /sys/class/drm trees,
through `vramscope status --json`, `vramscope record` and the recording read
back; a unified-memory NVIDIA board (NVML: memory "not supported") with its
pool and processes, marked, and the planner judging against that pool."""

from __future__ import annotations

import json

import psutil
import pytest

from drm_trees import AMD_SLOT, INTEL_SLOT, expected_memory, lab, rtx_4090_beside
from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, gone_pid
from vramscope.cli import main
from vramscope.core.samples import Frame, GpuSample
from vramscope.core.session import SessionReader
from vramscope.sources import all_gpus
from vramscope.sources.drm import drm_fdinfo, drm_sysfs
from vramscope.sources.gpu_backend import BackendPass, GpuBackend


@pytest.fixture
def workstation(fake_nvml, tmp_path, sleepers, monkeypatch):
    """-> (pids, state): the staged machine, its roots where the real source looks."""
    pids = sleepers(4)
    m = lab(tmp_path / "machine", *pids, gone_pid())
    monkeypatch.setattr(drm_fdinfo, "PROC", m.proc)
    monkeypatch.setattr(drm_sysfs, "SYS", m.sys)
    trainer, both, _arc, _sharer = pids
    state = rtx_4090_beside(fake_nvml, both)
    return pids, state


def status_json(capsys) -> dict:
    assert main(["status", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_status_json_shows_nvidia_amd_and_intel_with_the_staged_figures(workstation, capsys):
    pids, _state = workstation
    doc = status_json(capsys)
    gpus = doc["gpus"]
    assert [(g["index"], g["vendor"]) for g in gpus] == [(0, "NVIDIA"), (1, "AMD"), (2, "Intel")]
    nvidia, amd, intel = gpus
    want = expected_memory(*pids)
    assert {p["pid"]: p["used"] for p in amd["processes"]} == want[AMD_SLOT]
    assert {p["pid"]: p["used"] for p in intel["processes"]} == want[INTEL_SLOT]
    # the process on both the NVIDIA and the AMD card is on each, with each card's figure
    both = pids[1]
    assert {p["pid"]: p["used"] for p in nvidia["processes"]} == {both: 3 * GiB}
    assert next(p for p in amd["processes"] if p["pid"] == both)["used"] == 2 * GiB
    assert amd["name"] == "AMD Radeon RX 7900 XTX" and amd["pci_bus_id"] == AMD_SLOT
    assert amd["memory"]["total"] == 24 * GiB and amd["utilization"]["gpu"] == 37
    assert amd["memory"]["reserved"] is None and "NVIDIA" in amd["not_reported"]["reserved"]
    assert intel["utilization"]["gpu"] is None and intel["not_reported"]["util_gpu"]
    assert nvidia["not_reported"] == {} and nvidia["memory_kind"] is None
    assert all(p["command"].startswith("sleep") for g in gpus for p in g["processes"])
    # the text table names them too
    assert main(["status"]) == 0
    table = capsys.readouterr().out
    assert "GPU 1  AMD Radeon RX 7900 XTX" in table and "GPU 2  Intel Arc B580" in table


@pytest.mark.slow
def test_a_recorded_session_keeps_every_gpu_and_its_processes(workstation, tmp_path):
    pids, _state = workstation
    out = tmp_path / "all.vramscope"
    assert main(["record", "--out", str(out), "--duration", "1.5", "--interval", "0.5"]) == 0
    with SessionReader(out) as reader:
        assert [(g.index, g.name, g.vendor) for g in reader.gpus()] == [
            (0, "NVIDIA GeForce RTX 4090", "NVIDIA"),
            (1, "AMD Radeon RX 7900 XTX", "AMD"),
            (2, "Intel Arc B580", "Intel"),
        ]
        frame = reader.latest_frame()
    want = expected_memory(*pids)
    amd, intel = frame.gpus[1], frame.gpus[2]
    assert (amd.vendor, intel.vendor) == ("AMD", "Intel")
    assert {p.pid: p.used for p in amd.processes} == want[AMD_SLOT]
    assert {p.pid: p.used for p in intel.processes} == want[INTEL_SLOT]
    # and its export: each process's memory on the AMD card, as staged
    csv = tmp_path / "all.csv"
    assert main(["export", str(out), "--out", str(csv)]) == 0
    import csv as csvlib

    rows = list(csvlib.DictReader(csv.open()))
    shown = {
        (int(r["gpu"]), int(r["pid"])): int(float(r["value"]))
        for r in rows
        if r["pid"] and r["metric"] == "used"
    }
    for gpu, slot in ((1, AMD_SLOT), (2, INTEL_SLOT)):
        for pid, used in want[slot].items():
            assert shown[(gpu, pid)] == used


def test_a_machine_with_only_amd_and_intel_gpus_needs_no_nvidia_driver(workstation, fake_nvml, capsys):
    fake_nvml.write(FakeState(driver_loaded=False))
    doc = status_json(capsys)
    assert doc["error"] is None
    assert [g["vendor"] for g in doc["gpus"]] == ["AMD", "Intel"]
    assert [g["index"] for g in doc["gpus"]] == [0, 1]


def test_prometheus_series_carry_the_vendor(workstation):
    from vramscope.core.export.metrics import StoreCollector
    from vramscope.core.store.store import Store
    from vramscope.sources.all_gpus import AllGpusSource
    import time

    store = Store()
    source = AllGpusSource()
    try:
        store.append(source.sample(time.time()))
    finally:
        source.close()
    fams = {f.name: f for f in StoreCollector(store).collect()}
    used = fams["vramscope_gpu_memory_used_bytes"].samples
    assert {s.labels["vendor"] for s in used} == {"NVIDIA", "AMD", "Intel"}
    procs = fams["vramscope_process_memory_used_bytes"].samples
    pids = workstation[0]
    amd = {int(s.labels["pid"]): s.value for s in procs if s.labels["gpu"] == "1"}
    assert amd == {pid: float(b) for pid, b in expected_memory(*pids)[AMD_SLOT].items()}


# --- a vendor added: one module with a GpuBackend and one line in BACKENDS -----------


class AcmeBackend(GpuBackend):
    """A vendor this repository does not know, as its new module would read it."""

    def read(self, now: float, first_index: int) -> BackendPass:
        gpu = GpuSample(
            index=first_index,
            name="Acme Tensor X1",
            vendor="Acme",
            total=16 * GiB,
            used=5 * GiB,
            free=11 * GiB,
        )
        return BackendPass(Frame(time=now, gpus=(gpu,), source="acme"))


@pytest.fixture
def acme(monkeypatch):
    monkeypatch.setattr(all_gpus, "BACKENDS", [*all_gpus.BACKENDS, AcmeBackend])


def test_a_registered_backend_shows_its_gpus_after_the_others(workstation, acme, capsys):
    doc = status_json(capsys)
    assert [(g["index"], g["vendor"]) for g in doc["gpus"]] == [
        (0, "NVIDIA"),
        (1, "AMD"),
        (2, "Intel"),
        (3, "Acme"),
    ]
    new = doc["gpus"][3]
    assert (new["name"], new["memory"]["used"], new["memory"]["total"]) == (
        "Acme Tensor X1",
        5 * GiB,
        16 * GiB,
    )
    assert doc["source"].split(" + ") == ["nvml", "amdgpu", "xe", "acme"] and doc["error"] is None
    assert main(["status"]) == 0
    assert "GPU 3  Acme Tensor X1" in capsys.readouterr().out


def test_a_machine_with_only_the_new_vendor_needs_no_nvidia_driver(
    fake_nvml, acme, tmp_path, monkeypatch, capsys
):
    fake_nvml.write(FakeState(driver_loaded=False))
    monkeypatch.setattr(drm_sysfs, "SYS", str(tmp_path / "no-sys"))  # no DRM GPUs either
    doc = status_json(capsys)
    assert [(g["index"], g["name"]) for g in doc["gpus"]] == [(0, "Acme Tensor X1")]
    assert doc["error"] is None and doc["source"] == "acme"


# --- a unified-memory NVIDIA board ---------------------------------------------------


@pytest.fixture
def spark(fake_nvml, sleepers, tmp_path, monkeypatch):
    """A GB10 (DGX Spark): NVML answers "not supported" for its memory; two processes."""
    monkeypatch.setattr(drm_sysfs, "SYS", str(tmp_path / "no-sys"))  # no DRM GPUs here
    pids = sleepers(2)
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(
                    name="NVIDIA GB10",
                    memory=False,
                    memory_v2="no",
                    mig=None,
                    processes=[FakeProcess(pids[0], 20 * GiB, sm=70), FakeProcess(pids[1], None)],
                )
            ]
        )
    )
    return pids


def test_unified_board_shows_the_system_pool_and_its_processes_marked(spark, capsys):
    doc = status_json(capsys)
    (gpu,) = doc["gpus"]
    assert gpu["memory_kind"] == "unified"
    assert "unified memory" in gpu["not_reported"]["total"]
    vm = psutil.virtual_memory()
    assert gpu["memory"]["total"] == vm.total
    # free is what the kernel can give (available), within what moved between the two reads
    assert abs(gpu["memory"]["free"] - vm.available) < 256 * 1024 * 1024
    assert gpu["memory"]["used"] == gpu["memory"]["total"] - gpu["memory"]["free"]
    assert {p["pid"]: p["used"] for p in gpu["processes"]} == {spark[0]: 20 * GiB, spark[1]: None}
    assert main(["status"]) == 0
    assert "unified memory (the system's)" in capsys.readouterr().out


def test_planner_judges_a_unified_board_by_what_its_pool_can_give(spark):
    from vramscope.commands.plan import detect_gpus

    (target,), _now, why = detect_gpus()
    assert why is None
    name, capacity = target
    assert "unified memory" in name
    can_give = psutil.virtual_memory().available + 20 * GiB  # free now + what its processes hold
    assert abs(capacity - can_give) < 256 * 1024 * 1024
    assert capacity < psutil.virtual_memory().total + 20 * GiB


def test_fake_nvml_memory_switch_is_strict(fake_nvml):
    import pynvml

    fake_nvml.write(FakeState(gpus=[FakeGpu(memory=False)]))
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        for call in (
            lambda: pynvml.nvmlDeviceGetMemoryInfo(h),
            lambda: pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2),
        ):
            with pytest.raises(pynvml.NVMLError) as err:
                call()
            assert err.value.value == pynvml.NVML_ERROR_NOT_SUPPORTED
    finally:
        pynvml.nvmlShutdown()
    assert FakeState.parse(FakeState(gpus=[FakeGpu(memory=False)]).to_text()).gpus[0].memory is False
    with pytest.raises(ValueError):
        FakeState.parse("gpu\nmemory na 1\n")


def test_the_windows_sampling_process_sends_every_gpu_as_read(workstation):
    """The window reads frames from its sampling process (core/stream): vendor, memory
    kind and the reasons for n/a figures arrive as the source read them."""
    import time

    from vramscope.core.stream.codec import FrameDecoder, frame_to_wire
    from vramscope.sources.all_gpus import AllGpusSource

    source = AllGpusSource()
    try:
        frame = source.sample(time.time())
    finally:
        source.close()
    got = FrameDecoder().decode(json.loads(json.dumps(frame_to_wire(frame))))
    assert [(g.vendor, g.not_reported) for g in got.gpus] == [(g.vendor, g.not_reported) for g in frame.gpus]
    assert got.gpus == frame.gpus
