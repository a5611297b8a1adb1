"""The window over every GPU of the machine: an NVIDIA card from the fake NVML,
an AMD and an Intel card from staged DRM trees, each a row with its vendor and
its processes' staged figures; a unified-memory board's card says so."""

from __future__ import annotations

import pytest

from drm_trees import AMD_SLOT, INTEL_SLOT, expected_memory, lab
from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, gone_pid
from vramscope.core.pci_address import short_bus_id
from vramscope.sources import drm_fdinfo, drm_sysfs
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
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(
                    name="NVIDIA GeForce RTX 4090",
                    total=24 * GiB,
                    used=5 * GiB,
                    utilization=(60, 20),
                    processes=[FakeProcess(pids[1], 3 * GiB, sm=60)],
                )
            ]
        )
    )
    return pids


def test_amd_and_intel_rows_beside_nvidia_with_the_staged_processes(make_window, machine, artifacts_dir):
    w = make_window(frames_from(AllGpusSource()))
    panel = w.gpu_panel
    assert sorted(panel.rows) == [0, 1, 2]
    nvidia, amd, intel = (panel.rows[i].card for i in range(3))
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
    card = w.gpu_panel.rows[0].card
    assert card.title.text() == "NVIDIA GB10"
    assert card.mig.isVisible() and card.mig.text() == "unified memory  ·  system RAM"
    assert "system's memory" in card.mig.toolTip() and "system's memory" in card.percent.toolTip()
    open_every_group(w)
    assert sorted(int(p) for p in table_column(w, "PID") if p) == sorted(pids)
    save(w, artifacts_dir, "unified-1400x900.png")
    w.resize(1024, 700)
    w.refresh(force=True)
    save(w, artifacts_dir, "unified-1024x700.png")
