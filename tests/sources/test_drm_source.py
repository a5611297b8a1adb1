"""AMD and Intel GPUs from staged /proc fdinfo and /sys/class/drm trees, read by
the real source (sources/drm/drm_source.py): per-process figures equal to the staged ones,
each DRM client counted once, and what cannot be read said so, never a crash."""

from __future__ import annotations

import os
import tempfile

import pytest

from drm_trees import AMD_SLOT, INTEL_SLOT, GiB, MiB, as_other_user, expected_memory, lab
from fakenvml import gone_pid
from vramscope.core.samples import ACCESS_DENIED, AMD, INTEL
from vramscope.sources.drm.drm_source import DrmGpus
from vramscope.sources.drm.drm_sysfs import devices


@pytest.fixture
def machine(tmp_path, sleepers):
    pids = sleepers(4)
    gone = gone_pid()
    return lab(tmp_path, *pids, gone), pids, gone


def by_slot(gpus):
    return {g.pci_bus_id: g for g in gpus}


def test_each_gpu_with_its_processes_and_the_staged_figures(machine):
    m, pids, gone = machine
    gpus = DrmGpus(m.proc, m.sys).read(1000.0, first_index=1)
    assert [g.index for g in gpus] == [1, 2]  # after the NVIDIA ones; NVIDIA's card0 left to NVML
    amd, intel = by_slot(gpus)[AMD_SLOT], by_slot(gpus)[INTEL_SLOT]
    assert (amd.vendor, amd.name, intel.vendor, intel.name) == (
        AMD,
        "AMD Radeon RX 7900 XTX",
        INTEL,
        "Intel Arc B580",
    )
    want = expected_memory(*pids)
    assert {p.pid: p.used for p in amd.processes} == want[AMD_SLOT]
    assert {p.pid: p.used for p in intel.processes} == want[INTEL_SLOT]
    assert gone not in {p.pid for g in gpus for p in g.processes}
    # the processes are the real ones, named by psutil
    assert all(p.info is not None and p.info.name == "sleep" for g in gpus for p in g.processes)


def test_device_figures_from_sysfs_and_what_is_missing_says_why(machine):
    m, _pids, _gone = machine
    amd, intel = DrmGpus(m.proc, m.sys).read(1000.0)
    assert (amd.total, amd.used, amd.free) == (24 * GiB, 7 * GiB // 2, 24 * GiB - 7 * GiB // 2)
    assert (amd.util_gpu, amd.temperature, amd.power_w, amd.power_limit_w) == (37, 55, 180.0, 303.0)
    assert amd.util_memory == 12  # amdgpu's mem_busy_percent: the memory controller
    assert intel.util_memory is None and "memory-controller" in intel.reason("util_memory")
    assert amd.mig_mode is None and "NVIDIA" in amd.reason("mig")
    # xe: a VRAM size per tile, no device-wide use or busy %: used is the processes' sum
    assert intel.total == 12 * GiB and intel.used == GiB
    assert "xe" in intel.reason("used") and intel.util_gpu is None
    assert "busy" in intel.reason("util_gpu")
    assert intel.temperature is None and intel.reason("temperature")


def test_busy_percent_from_engine_time_between_passes(machine):
    m, pids, _gone = machine
    trainer, _both, arc, _sharer = pids
    source = DrmGpus(m.proc, m.sys)
    first = source.read(1000.0)
    assert all(p.sm is None for g in first for p in g.processes)  # nothing to compare with yet
    # one second later: the trainer's gfx engine ran 0.25 s; the Arc client 400 of 1000 cycles
    from drm_trees import amdgpu_fdinfo, xe_fdinfo

    t7 = amdgpu_fdinfo(7, vram=GiB, gfx_ns=5_250_000_000)
    for fd in (3, 4, 5):
        (m.root / "proc" / str(trainer) / "fdinfo" / str(fd)).write_text(t7)
    a44 = xe_fdinfo(44, vram=768 * MiB, cycles=500, total_cycles=2000)
    for fd in (3, 4):
        (m.root / "proc" / str(arc) / "fdinfo" / str(fd)).write_text(a44)
    amd, intel = source.read(1001.0)
    sm = {p.pid: p.sm for g in (amd, intel) for p in g.processes}
    if min(pids) == trainer:
        assert sm[trainer] == 25
    assert sm[arc] == 40


def test_another_users_unreadable_fdinfo_is_access_denied_not_a_crash(sleepers):
    pids = sleepers(5)
    root = tempfile.mkdtemp(prefix="vramscope-drm-")
    os.chmod(root, 0o755)
    try:
        import pathlib

        m = lab(pathlib.Path(root), *pids[:4], gone_pid(), stranger=pids[4])
        source = DrmGpus(m.proc, m.sys)
        with as_other_user():
            amd, intel = source.read(1000.0)
        stranger = next(p for p in amd.processes if p.pid == pids[4])
        assert stranger.used is None
        assert stranger.info.visibility == ACCESS_DENIED
        assert "access denied" in amd.reason("process_memory")
        # everyone else's figures are still there
        assert {p.pid: p.used for p in amd.processes if p.pid != pids[4]} == expected_memory(*pids[:4])[
            AMD_SLOT
        ]
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def test_no_drm_tree_means_no_gpus(tmp_path):
    assert DrmGpus(str(tmp_path / "proc"), str(tmp_path / "sys")).read(1.0) == ()
    assert devices(str(tmp_path)) == []


def test_a_symlinked_fdinfo_is_not_followed(machine):
    m, pids, _gone = machine
    arc = pids[2]
    info = m.root / "proc" / str(arc) / "fdinfo"
    secret = m.root / "secret"
    secret.write_text(
        "drm-driver:\txe\ndrm-client-id:\t99\ndrm-pdev:\t0000:08:00.0\ndrm-resident-vram0:\t9999 KiB\n"
    )
    for fd in ("3", "4"):
        (info / fd).unlink()
        (info / fd).symlink_to(secret)
    _amd, intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert all(p.used != 9999 * 1024 for p in intel.processes)
    assert arc not in {p.pid for p in intel.processes if p.used}


def test_an_integrated_gpu_is_unified_memory_with_its_processes_buffers(tmp_path, sleepers):
    """A laptop's Intel iGPU (i915, no VRAM): marked unified, the system's pool, each
    process's buffers in system memory as its figure."""
    import pathlib

    import psutil

    from drm_trees import Fd, Machine, _device

    (pid,) = sleepers(1)
    m = Machine(pathlib.Path(tmp_path))
    _device(
        m.root / "sys" / "class" / "drm", "card0", ("renderD128",), "0000:00:02.0", "i915", 0x8086, 0xA7A0, {}
    )
    m.fds[pid] = [
        Fd(
            "renderD128",
            "drm-driver:\ti915\ndrm-client-id:\t3\ndrm-pdev:\t0000:00:02.0\n"
            "drm-total-system0:\t96 MiB\ndrm-resident-system0:\t64 MiB\n"
            "drm-engine-render:\t0 ns\n",
        )
    ]
    m.stage_proc()
    (gpu,) = DrmGpus(m.proc, m.sys).read(1.0)
    assert gpu.vendor == INTEL and gpu.unified and "integrated" in gpu.reason("total")
    assert gpu.total == psutil.virtual_memory().total
    assert {p.pid: p.used for p in gpu.processes} == {pid: 64 * MiB} and gpu.used == 64 * MiB


def test_new_gpu_processes_show_within_the_full_scan_delay(machine, sleepers):
    from drm_trees import Fd, xe_fdinfo
    from vramscope.sources.drm.drm_source import FULL_SCAN_EVERY

    m, _pids, _gone = machine
    source = DrmGpus(m.proc, m.sys)
    source.read(1000.0)
    (late,) = sleepers(1)
    m.fds = {late: [Fd("renderD130", xe_fdinfo(50, vram=128 * MiB))]}
    m.stage_proc()
    _amd, intel = source.read(1001.0)  # known holders only: not walked yet
    assert late not in {p.pid for p in intel.processes}
    _amd, intel = source.read(1000.0 + FULL_SCAN_EVERY)
    assert {p.pid: p.used for p in intel.processes}[late] == 128 * MiB
