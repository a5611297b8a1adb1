"""Diagnostics on AMD and Intel GPUs read through DRM (staged trees, real
processes): an idle process holding an AMD card's memory is a squatter, a
busy one (its gfx engine time rising) is not; an AMD card nearly full is
near-OOM, the Intel card with room is not."""

from __future__ import annotations

import pytest

from drm_trees import GiB, MiB, amdgpu_fdinfo, lab
from fakenvml import gone_pid
from vramscope.core.detectors import Diagnostics
from vramscope.core.samples import Frame
from vramscope.sources.drm.drm_source import DrmGpus

T0 = 1_800_000_000.0


@pytest.fixture
def run(tmp_path, sleepers):
    pids = sleepers(4)
    m = lab(tmp_path, *pids, gone_pid())
    m.stage_sys(amd_used=24 * GiB - 400 * MiB)  # the AMD card nearly full
    trainer = pids[0]
    source = DrmGpus(m.proc, m.sys)
    engine = Diagnostics()
    alerts = []
    for k in range(8 * 12):  # eight minutes, every five seconds
        t = T0 + 5 * k
        busy = amdgpu_fdinfo(7, vram=GiB, gfx_ns=k * 4_000_000_000)  # 80 % of each 5 s
        for fd in (3, 4, 5):
            (m.root / "proc" / str(trainer) / "fdinfo" / str(fd)).write_text(busy)
        alerts = engine.feed(Frame(time=t, gpus=source.read(t)))
    return pids, alerts


def test_an_idle_holder_is_a_squatter_and_a_busy_one_is_not(run):
    (trainer, both, arc, sharer), alerts = run
    squatters = {(a.gpu, a.pid) for a in alerts if a.kind == "squatter"}
    assert (0, both) in squatters  # 2 GiB on the AMD card, its engines idle for eight minutes
    assert (1, arc) in squatters  # 768 MiB on the Intel card, no cycles since
    busy_holder = min(trainer, sharer)  # client 7 (the busy one) is counted for the lower PID
    assert (0, busy_holder) not in squatters


def test_a_nearly_full_amd_card_is_near_oom_and_the_intel_card_is_not(run):
    _pids, alerts = run
    near = {a.gpu for a in alerts if a.kind == "near_oom"}
    assert near == {0}


def test_a_rocm_run_is_not_called_idle_though_fdinfo_shows_no_engine_time(tmp_path, sleepers):
    """ROCm's user-mode queues leave drm-engine-* flat: with a process holding /dev/kfd
    on the card, per-process busy % is n/a, and a busy card is no squatter's."""
    from drm_trees import Fd

    pids = sleepers(4)
    m = lab(tmp_path, *pids, gone_pid())
    rocm = pids[1]  # `both`: add /dev/kfd to it, as a ROCm PyTorch process holds it
    m.fds[rocm].append(Fd("/dev/kfd", None))
    m.stage_proc()
    source = DrmGpus(m.proc, m.sys)
    engine = Diagnostics()
    for k in range(8 * 12):
        t = T0 + 5 * k
        gpus = source.read(t)
        alerts = engine.feed(Frame(time=t, gpus=gpus))
    amd = gpus[0]
    assert all(p.sm is None for p in amd.processes)
    assert "ROCm" in amd.reason("process_sm")
    assert amd.util_gpu == 37  # the card is busy (gpu_busy_percent)
    assert not [a for a in alerts if a.kind == "squatter" and a.gpu == 0]
    # the Intel card has no ROCm process: its idle holder is still one
    assert [a for a in alerts if a.kind == "squatter" and a.gpu == 1]
