"""Each driver's machine as the kernel writes it, read by the real source
(sources/drm/drm_source.py): an AMD APU, an xe iGPU, an Arc on i915, ROCm processes through
KFD, counters that read lower, clients without an id or a pdev, partial and
implausible figures. What each must show and what it must not."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import psutil
import pytest

from drm_trees import (
    AMD_SLOT,
    APU_SLOT,
    ARC_SLOT,
    XE_IGPU_SLOT,
    Fd,
    GiB,
    Machine,
    MiB,
    amdgpu_5_15_fdinfo,
    amdgpu_fdinfo,
    as_other_user,
    expected_memory,
    i915_fdinfo,
    lab,
    stage_apu,
    stage_arc_on_i915,
    stage_xe_igpu,
    xe_igpu_fdinfo,
)
from kfd_trees import KfdNode, stage_kfd
from fakenvml import gone_pid
from vramscope.core.samples import ACCESS_DENIED
from vramscope.sources.drm import kcmp
from vramscope.sources.drm.drm_source import DrmGpus

AMD_GPU_ID = 53251  # KFD's gpu_id of the lab's AMD card (renderD129)


def one_gpu(m: Machine):
    (gpu,) = DrmGpus(m.proc, m.sys).read(1000.0)
    return gpu


def used_by_pid(gpu) -> dict:
    return {p.pid: p.used for p in gpu.processes}


# --- 1. engine counters that read lower -----------------------------------------------


def test_a_counter_that_reads_lower_is_not_measured_from(tmp_path, sleepers):
    """drm-usage-stats.rst: userspace stays with the previous, larger value until the
    counter catches up. 10 s, then 9.5 s (lower), then 10.8 s two seconds after the
    10 s: 40 % busy, not the 100 % measured from the lower reading."""
    (pid,) = sleepers(1)
    m = Machine(tmp_path)
    m.stage_sys()
    info = m.root / "proc" / str(pid) / "fdinfo" / "3"
    m.fds[pid] = [Fd("renderD129", amdgpu_fdinfo(7, vram=GiB, gfx_ns=10_000_000_000))]
    m.stage_proc()
    source = DrmGpus(m.proc, m.sys)
    source.read(1000.0)
    info.write_text(amdgpu_fdinfo(7, vram=GiB, gfx_ns=9_500_000_000))
    amd = source.read(1001.0)[0]
    assert [p.sm for p in amd.processes] == [None]  # no figure from a counter that went back
    info.write_text(amdgpu_fdinfo(7, vram=GiB, gfx_ns=10_800_000_000))
    amd = source.read(1002.0)[0]
    assert [p.sm for p in amd.processes] == [40]
    info.write_text(amdgpu_fdinfo(7, vram=GiB, gfx_ns=11_300_000_000))
    amd = source.read(1003.0)[0]
    assert [p.sm for p in amd.processes] == [50]  # monotonic again: measured as usual


# --- 2, 3, 4. discrete or integrated ----------------------------------------------------


def test_an_arc_on_i915_is_a_discrete_card_whose_size_is_na_with_the_reason(tmp_path, sleepers):
    pid, other = sleepers(2)
    m = Machine(tmp_path)
    stage_arc_on_i915(m)
    m.fds[pid] = [Fd("renderD129", i915_fdinfo(3, local=3 * GiB))]
    m.fds[other] = [Fd("renderD129", i915_fdinfo(4, local=GiB // 2))]
    m.stage_proc()
    arc = one_gpu(m)
    assert not arc.unified and arc.memory_kind is None
    assert arc.total is None and "i915" in arc.reason("total") and "ioctl" in arc.reason("total")
    assert arc.total != psutil.virtual_memory().total
    assert used_by_pid(arc) == {pid: 3 * GiB, other: GiB // 2}  # local0 (+ stolen-local0), not system0
    assert arc.used == 3 * GiB + GiB // 2 and "fdinfo" in arc.reason("used")
    assert arc.power_w == 38.0


def test_an_xe_igpu_is_unified_memory(tmp_path, sleepers):
    (pid,) = sleepers(1)
    m = Machine(tmp_path)
    stage_xe_igpu(m)
    m.fds[pid] = [Fd("renderD128", xe_igpu_fdinfo(9, system=200 * MiB, gtt=56 * MiB))]
    m.stage_proc()
    gpu = one_gpu(m)
    assert gpu.pci_bus_id == XE_IGPU_SLOT
    assert gpu.unified and "integrated" in gpu.reason("total")
    assert gpu.total == psutil.virtual_memory().total
    assert used_by_pid(gpu) == {pid: 256 * MiB} and gpu.used == 256 * MiB


def test_a_discrete_xe_card_stays_discrete(machine_lab):
    m, _pids = machine_lab
    _amd, intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert not intel.unified and intel.total == 12 * GiB


@pytest.fixture
def machine_lab(tmp_path, sleepers):
    pids = sleepers(4)
    return lab(tmp_path, *pids, gone_pid()), pids


def apu_machine(tmp_path, sleepers, kfd_nodes):
    (pid,) = sleepers(1)
    m = Machine(tmp_path)
    stage_apu(m)
    if kfd_nodes is not None:
        stage_kfd(m.root / "sys", kfd_nodes, {})
    m.fds[pid] = [Fd("renderD128", amdgpu_fdinfo(5, vram=256 * MiB, gtt=2 * GiB, pdev=APU_SLOT))]
    m.stage_proc()
    return m, pid


@pytest.mark.parametrize(
    "nodes",
    [
        # a BIOS CRAT: CPU cores and SIMDs in one node
        [KfdNode(gpu_id=4242, cpu_cores=16, simds=24, render_minor=128)],
        None,  # no KFD: amdgpu hides mem_info_vram_vendor and the VRAM is a carve-out
    ],
    ids=["kfd-topology", "no-kfd"],
)
def test_an_amd_apu_is_unified_memory_with_gtt_counted(tmp_path, sleepers, nodes):
    m, pid = apu_machine(tmp_path, sleepers, nodes)
    apu = one_gpu(m)
    assert apu.unified and "APU" in apu.reason("total")
    assert apu.total == psutil.virtual_memory().total + 512 * MiB  # not the 512 MiB carve-out alone
    assert apu.used == 300 * MiB + 6 * GiB  # carve-out in use + GTT in use
    assert used_by_pid(apu) == {pid: 256 * MiB + 2 * GiB}
    assert (apu.util_gpu, apu.util_memory, apu.temperature) == (9, 4, 48)


def test_a_small_discrete_amd_card_is_not_called_an_apu(tmp_path, sleepers):
    """A 4 GiB card: KFD's node has no CPU cores; without KFD, amdgpu names its
    memory's maker. Neither is unified."""
    m, pid = apu_machine(tmp_path, sleepers, [KfdNode(gpu_id=7, simds=32, render_minor=128)])
    amd = one_gpu(m)
    assert not amd.unified and amd.total == 512 * MiB
    assert used_by_pid(amd) == {pid: 256 * MiB}  # its VRAM only: GTT is not a card's memory
    vendor = m.root / "sys" / "class" / "drm" / "card0" / "device" / "mem_info_vram_vendor"
    vendor.write_text("hynix\n")
    shutil.rmtree(m.root / "sys" / "class" / "kfd")
    assert not one_gpu(m).unified


def test_a_dgpu_under_kfd_stays_discrete(machine_lab):
    m, pids = machine_lab
    stage_kfd(
        m.root / "sys", [KfdNode(0, cpu_cores=16), KfdNode(AMD_GPU_ID, simds=192, render_minor=129)], {}
    )
    amd, _intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert not amd.unified and amd.total == 24 * GiB
    assert used_by_pid(amd) == expected_memory(*pids)[AMD_SLOT]


# --- 5. ROCm processes through KFD -------------------------------------------------------


@pytest.fixture
def open_root():
    """A staging root others may read (the reads below are made as another user)."""
    root = tempfile.mkdtemp(prefix="vramscope-drm-")
    os.chmod(root, 0o755)
    yield pathlib.Path(root)
    shutil.rmtree(root, ignore_errors=True)


def test_rocm_processes_from_kfd_each_byte_once(open_root, sleepers):
    """``rocm`` holds the render node and /dev/kfd: fdinfo and KFD count the same
    6 GiB (once), as on a 5.15 kernel (``old``, amdgpu's own fdinfo keys); ``hidden``'s fd table is closed to us (another user's): KFD alone
    lists it; ``denied``'s fdinfo is unreadable: KFD's figure stands."""
    rocm, hidden, denied, graphics, old = sleepers(5)
    m = Machine(open_root)
    m.stage_sys()
    m.fds[rocm] = [Fd("renderD129", amdgpu_fdinfo(30, vram=6 * GiB)), Fd("/dev/kfd", "pos:\t0\n")]
    # a 5.15 kernel's fdinfo (amdgpu's own keys, no drm- ones) and its KFD figure
    m.fds[old] = [Fd("renderD129", amdgpu_5_15_fdinfo(vram=2 * GiB)), Fd("/dev/kfd", "pos:\t0\n")]
    m.fds[denied] = [Fd("renderD129", amdgpu_fdinfo(31, vram=GiB), readable=False)]
    m.fds[graphics] = [Fd("renderD129", amdgpu_fdinfo(32, vram=128 * MiB))]
    m.stage_proc()
    stage_kfd(
        m.root / "sys",
        [KfdNode(0, cpu_cores=16), KfdNode(AMD_GPU_ID, simds=192, render_minor=129)],
        {
            rocm: {AMD_GPU_ID: 6 * GiB},
            hidden: {AMD_GPU_ID: 3 * GiB},
            denied: {AMD_GPU_ID: GiB},
            old: {AMD_GPU_ID: 2 * GiB},
        },
    )
    with as_other_user():
        amd, _intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert used_by_pid(amd) == {
        rocm: 6 * GiB,
        hidden: 3 * GiB,
        denied: GiB,
        graphics: 128 * MiB,
        old: 2 * GiB,
    }
    assert all(p.sm is None for p in amd.processes) and "ROCm" in amd.reason("process_sm")
    assert all(p.info.visibility != ACCESS_DENIED for p in amd.processes)


def test_no_kfd_tree_changes_nothing(machine_lab):
    m, pids = machine_lab
    stage_kfd(m.root / "sys", [KfdNode(0, cpu_cores=16)], {})
    amd, _intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert used_by_pid(amd) == expected_memory(*pids)[AMD_SLOT]
    assert amd.reason("process_sm") is None


# --- 7. clients without an id or a pdev; partial figures -------------------------------


HOLDER = """
import os, sys, time
a = os.open("/dev/null", os.O_RDONLY)
os.dup2(a, 10); os.dup2(a, 11)
os.dup2(os.open("/dev/null", os.O_RDONLY), 12)
if os.fork() == 0:  # the child shares fd 10's file
    for fd in (11, 12):
        os.close(fd)
    print(os.getpid(), flush=True)
    time.sleep(300)
    os._exit(0)
time.sleep(300)
"""


def without_client_id(text: str) -> str:
    return "".join(line + "\n" for line in text.splitlines() if not line.startswith("drm-client-id"))


@pytest.mark.skipif(not kcmp.available(), reason="this kernel answers no kcmp(2) (CONFIG_CHECKPOINT_RESTORE)")
def test_a_client_without_an_id_through_duplicated_fds_counts_once(tmp_path):
    """A real process holding one open file through fds 10 and 11 (dup) and a second
    file as fd 12, and its forked child holding fd 10's file: kcmp(2) says which are
    one client, so 2 clients of 1 GiB are counted, the child's copy not again."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    try:
        child = int(holder.stdout.readline())
        m = Machine(tmp_path)
        m.stage_sys()
        text = without_client_id(amdgpu_fdinfo(0, vram=GiB))
        m.fds[holder.pid] = [Fd("renderD129", text, number=n) for n in (10, 11, 12)]
        m.fds[child] = [Fd("renderD129", text, number=10)]
        m.stage_proc()
        amd, _intel = DrmGpus(m.proc, m.sys).read(1.0)
        assert used_by_pid(amd) == {holder.pid: 2 * GiB}
    finally:
        for p in psutil.Process(holder.pid).children():
            p.kill()
        holder.kill()
        holder.wait()


def test_without_kcmp_evidence_each_open_file_is_its_own_client(tmp_path, sleepers):
    """Staged fds no real process holds (kcmp cannot say): each counted, and two
    processes' id-less clients are never merged into one."""
    a, b = sleepers(2)
    m = Machine(tmp_path)
    m.stage_sys()
    text = without_client_id(amdgpu_fdinfo(0, vram=GiB))
    m.fds[a] = [Fd("renderD129", text)]
    m.fds[b] = [Fd("renderD129", text), Fd("renderD129", text)]
    m.stage_proc()
    amd, _intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert used_by_pid(amd) == {a: GiB, b: 2 * GiB}


def test_a_client_without_drm_pdev_is_placed_by_its_device_node(tmp_path, sleepers):
    (pid,) = sleepers(1)
    m = Machine(tmp_path)
    stage_arc_on_i915(m)
    m.fds[pid] = [Fd("renderD129", i915_fdinfo(3, local=GiB, pdev=None))]
    m.stage_proc()
    arc = one_gpu(m)
    assert arc.pci_bus_id == ARC_SLOT and used_by_pid(arc) == {pid: GiB}


def test_one_unreadable_drm_fd_makes_the_figure_partial_and_says_so(open_root, sleepers):
    pid, other = sleepers(2)
    m = Machine(open_root)
    m.stage_sys()
    m.fds[pid] = [
        Fd("renderD129", amdgpu_fdinfo(20, vram=GiB)),
        Fd("renderD129", amdgpu_fdinfo(21, vram=2 * GiB), readable=False),
    ]
    m.fds[other] = [Fd("renderD129", amdgpu_fdinfo(22, vram=GiB))]
    m.stage_proc()
    with as_other_user():
        amd, _intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert used_by_pid(amd) == {pid: GiB, other: GiB}
    why = amd.reason("process_memory")
    assert f"partial figure for PID {pid}" in why and str(other) not in why


def test_all_readable_fds_say_nothing_is_partial(machine_lab):
    m, _pids = machine_lab
    amd, intel = DrmGpus(m.proc, m.sys).read(1.0)
    assert amd.reason("process_memory") is None and intel.reason("process_memory") is None


# --- 8. figures beyond any card ----------------------------------------------------------


def test_implausible_figures_are_left_out_and_said_never_kept(machine_lab):
    m, pids = machine_lab
    trainer, both, _arc, _sharer = pids
    forty = "9" * 40
    (m.root / "proc" / str(both) / "fdinfo" / "4").write_text(
        amdgpu_fdinfo(9, vram=2 * GiB).replace(
            f"drm-resident-vram:\t{2 * GiB // 1024} KiB", f"drm-resident-vram:\t{forty} KiB"
        )
    )
    device = m.root / "sys" / "class" / "drm" / "card1" / "device"
    (device / "hwmon" / "hwmon3" / "temp1_input").write_text("4" * 4000 + "\n")
    (device / "mem_info_vram_used").write_text("1" * 30 + "\n")
    stage_kfd(
        m.root / "sys",
        [KfdNode(AMD_GPU_ID, simds=192, render_minor=129)],
        {trainer: {AMD_GPU_ID: "7" * 50}},
    )
    amd, intel = DrmGpus(m.proc, m.sys).read(1.0)
    shown = used_by_pid(amd)
    assert shown[both] is None  # its figure is not known: never 10^43 bytes
    assert all(v is None or v < 1 << 50 for v in shown.values())
    assert "implausible" in amd.reason("process_memory") and str(both) in amd.reason("process_memory")
    assert amd.temperature is None and "implausible" in amd.reason("temperature")
    assert "4000-digit" in amd.reason("temperature")
    assert amd.used is None or amd.used < 1 << 50
    assert amd.power_w == 180.0  # the rest of the card is read as usual
    assert used_by_pid(intel) == expected_memory(*pids)[intel.pci_bus_id]


def test_sums_beyond_any_card_are_implausible_too(tmp_path, sleepers):
    """Many clients each just under the bound: no sum beyond any card (or int64) is
    kept, for the process or for the card."""
    hoarder, big, other = sleepers(3)
    m = Machine(tmp_path)
    stage_arc_on_i915(m)
    near = (1 << 50) - GiB
    m.fds[hoarder] = [Fd("renderD129", i915_fdinfo(100 + n, local=near)) for n in range(20)]
    m.fds[other] = [Fd("renderD129", i915_fdinfo(200, local=GiB))]
    m.stage_proc()
    arc = one_gpu(m)
    assert used_by_pid(arc) == {hoarder: None, other: GiB}
    assert "implausible" in arc.reason("process_memory") and str(hoarder) in arc.reason("process_memory")
    assert arc.used == GiB  # the readable, plausible figures' sum
    m.fds = {big: [Fd("renderD129", i915_fdinfo(300, local=near))]}
    m.fds[other] = [Fd("renderD129", i915_fdinfo(200, local=near))]
    m.stage_proc()
    arc = one_gpu(m)
    assert used_by_pid(arc)[big] == near and arc.used is None  # two plausible rows, an implausible card
    assert "implausible" in arc.reason("used")
