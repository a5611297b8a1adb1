"""The window over every GPU of the machine: an NVIDIA card from the fake NVML,
an AMD and an Intel card from staged DRM trees, each a row with its vendor and
its processes' staged figures; a unified-memory board's card says so."""

from __future__ import annotations

import pytest

from drm_trees import AMD_SLOT, INTEL_SLOT, expected_memory, lab, rtx_4090_beside
from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, gone_pid
from vramscope.core.pci_address import short_bus_id
from vramscope.sources.drm import drm_fdinfo, drm_sysfs
from vramscope.sources.all_gpus import AllGpusSource

from .frames import T0
from .helpers import open_every_group, save, table_column


def frames_from(source, n=40):
    try:
        return [source.sample(T0 + k) for k in range(n)]
    finally:
        source.close()


@pytest.fixture
def machine(fake_nvml, tmp_path, sleepers, monkeypatch):
    pids = sleepers(4)
    m = lab(tmp_path / "machine", *pids, gone_pid(), stranger=None)
    monkeypatch.setattr(drm_fdinfo, "PROC", m.proc)
    monkeypatch.setattr(drm_sysfs, "SYS", m.sys)
    rtx_4090_beside(fake_nvml, pids[1])
    return pids


def test_amd_and_intel_rows_beside_nvidia_with_the_staged_processes(make_window, machine, artifacts_dir):
    w = make_window(frames_from(AllGpusSource()))
    panel = w.gpu_panel
    assert sorted(panel.grid.rows) == [0, 1, 2]
    nvidia, amd, intel = (panel.grid.rows[i].card for i in range(3))
    assert nvidia.title.text() == "NVIDIA GeForce RTX 4090"
    assert amd.title.text() == "AMD Radeon RX 7900 XTX"
    assert amd.heading.text().startswith("GPU 1  ·  AMD  ·  ")  # the bus id may be elided
    assert amd.heading.toolTip() == f"GPU 1  ·  AMD  ·  {short_bus_id(AMD_SLOT)}"  # (domain 0000)
    assert intel.heading.toolTip() == f"GPU 2  ·  Intel  ·  {short_bus_id(INTEL_SLOT)}"
    assert amd.used.text() == "3.5 / 24.0 GiB"
    assert intel.used.text() == "1.0 / 12.0 GiB" and "xe" in intel.used.toolTip()
    assert intel.values["util"].text() == "n/a" and "busy" in intel.values["util"].toolTip()
    assert "NVIDIA" in amd.values["reserved"].toolTip()
    # the table: every process once per GPU, memory as staged
    want = expected_memory(*machine)
    open_every_group(w)  # processes of one parent and command line are one row until opened
    rows = [(g, int(p), m) for p, g, m in zip(*(table_column(w, n) for n in ("PID", "GPU", "Memory"))) if p]
    shown = {(g, p): m for g, p, m in rows}
    for gpu, slot in ((1, AMD_SLOT), (2, INTEL_SLOT)):
        for pid, used in want[slot].items():
            assert shown[(str(gpu), pid)] == f"{used / GiB:.2f} GiB"
    assert len(rows) == sum(len(v) for v in want.values()) + 1  # + the NVIDIA row
    save(w, artifacts_dir, "all-gpus-1400x900.png")
    w.resize(1024, 700)
    w.refresh(force=True)
    save(w, artifacts_dir, "all-gpus-1024x700.png")


def test_a_unified_memory_board_says_so(
    make_window, fake_nvml, sleepers, tmp_path, monkeypatch, artifacts_dir
):
    monkeypatch.setattr(drm_sysfs, "SYS", str(tmp_path / "no-sys"))
    pids = sleepers(2)
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(
                    name="NVIDIA GB10",
                    memory=False,
                    memory_v2="no",
                    processes=[FakeProcess(pids[0], GiB, sm=70), FakeProcess(pids[1], GiB // 2, sm=0)],
                )
            ]
        )
    )
    w = make_window(frames_from(AllGpusSource(), n=20))
    card = w.gpu_panel.grid.rows[0].card
    assert card.title.text() == "NVIDIA GB10"
    assert card.mig.isVisible() and card.mig.text() == "unified memory  ·  system RAM"
    assert "system's memory" in card.mig.toolTip() and "system's memory" in card.percent.toolTip()
    open_every_group(w)
    assert sorted(int(p) for p in table_column(w, "PID") if p) == sorted(pids)
    save(w, artifacts_dir, "unified-1400x900.png")
    w.resize(1024, 700)
    w.refresh(force=True)
    save(w, artifacts_dir, "unified-1024x700.png")


def test_an_amd_only_apu_box_says_amdgpu_and_unified_memory(
    make_window, fake_nvml, sleepers, tmp_path, monkeypatch, artifacts_dir
):
    """A Radeon 780M APU running ROCm, no NVIDIA driver: the frame goes through the
    window's sampler reader (the message its sampler process sends); the toolbar
    names amdgpu, never nvml; the card says unified memory with the system's RAM."""
    import json

    import psutil

    from drm_trees import APU_SLOT, Fd, Machine, MiB, amdgpu_fdinfo, stage_apu
    from kfd_trees import KfdNode, stage_kfd
    from fakenvml import FakeState
    from PySide6.QtCore import Qt

    from vramscope.core.stream import protocol
    from vramscope.core.stream.delta_reader import FrameAssembler
    from vramscope.core.stream.deltas import FrameDiffer
    from vramscope.sources.remote.local_sampler import LocalSamplerSource
    from vramscope.ui.processes.process_model import COL

    fake_nvml.write(FakeState(driver_loaded=False))
    (rocm,) = sleepers(1)
    m = Machine(tmp_path / "machine")
    stage_apu(m)
    stage_kfd(
        m.root / "sys", [KfdNode(4242, cpu_cores=16, simds=24, render_minor=128)], {rocm: {4242: 256 * MiB}}
    )
    m.fds[rocm] = [Fd("renderD128", amdgpu_fdinfo(3, vram=256 * MiB, gtt=4 * GiB, pdev=APU_SLOT))]
    m.stage_proc()
    monkeypatch.setattr(drm_fdinfo, "PROC", m.proc)
    monkeypatch.setattr(drm_sysfs, "SYS", m.sys)
    frame = frames_from(AllGpusSource(), n=1)[0]
    sampler = LocalSamplerSource([], 1.0, name="nvml")  # as the window starts it
    reader = FrameAssembler()
    for message in (protocol.hello("box", "1.0", 1.0), FrameDiffer().message(frame, [])):
        sampler.process._handle(json.loads(protocol.encode(message)), reader)
    shown = sampler.sample(T0)
    w = make_window([shown], source=sampler)
    w._update_status()
    assert w.controls.source_label.text().strip() == "Source: amdgpu"
    card = w.gpu_panel.grid.rows[0].card
    assert card.mig.text() == "unified memory  ·  system RAM"
    assert shown.gpus[0].total == psutil.virtual_memory().total + 512 * MiB
    open_every_group(w)
    assert [int(p) for p in table_column(w, "PID") if p] == [rocm]
    assert table_column(w, "Memory")[0] == f"{(256 * MiB + 4 * GiB) / GiB:.2f} GiB"
    tip = w.table.model.headerData(COL["Memory"], Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "fdinfo" in tip and "KFD" in tip and not tip.startswith("Device memory NVML")
    save(w, artifacts_dir, "apu-1400x900.png")
