"""The demo workstation: deterministic, self-consistent, and telling its story
at the times the docstring of sources/demo/simulated.py promises."""

from __future__ import annotations

import pytest

from vramscope.core.samples import ALL_BUCKETS, BUCKET_NAMES, VISIBLE
from vramscope.core.units import GiB, MiB
from vramscope.sources.demo.simulated import (
    KERNEL_BYTES,
    SHORT_JOB_FROM,
    SHORT_JOB_PERIOD,
    SHORT_JOB_UNTIL,
    TRAIN_START,
    SimulatedSource,
)

T0 = 1_700_000_000.0


def _frames(seed=1, times=range(0, 400, 1)):
    src = SimulatedSource(seed=seed, start_time=T0)
    return src, [src.sample(T0 + t) for t in times]


def _by_command(frame, needle):
    return [(g, p) for g, p in frame.all_processes() if needle in (p.info.command or "")]


def _agent_for(frame, proc):
    return [a for a in frame.agents if a.identity == proc.identity]


def test_same_seed_same_frames_other_seed_other_machine():
    times = [0.0, 0.5, 1.0, 7.3, 20.0, 61.0, 300.0, 3000.0]
    _, a = _frames(seed=7, times=times)
    _, b = _frames(seed=7, times=times)
    assert a == b
    assert [[e.data for r in f.agents for e in r.events] for f in a] == [
        [e.data for r in f.agents for e in r.events] for f in b
    ]
    _, c = _frames(seed=8, times=times)
    assert {g.uuid for g in a[0].gpus}.isdisjoint({g.uuid for g in c[0].gpus})
    pids = [{p.pid for _, p in f.all_processes()} for f in (a[-1], c[-1])]
    assert pids[0].isdisjoint(pids[1])


def test_start_time_defaults_to_the_first_sample():
    src = SimulatedSource(seed=1)
    first = src.sample(T0 + 50.0)
    assert src.start_time == T0 + 50.0
    same = SimulatedSource(seed=1, start_time=T0 + 50.0).sample(T0 + 50.0)
    assert first == same


def test_frames_say_they_are_simulated():
    src, frames = _frames(times=[0, 30])
    assert src.name == "demo" and src.simulated
    for f in frames:
        assert f.simulated and f.source == "demo" and f.error is None
    names = [g.name for g in frames[0].gpus]
    assert names == ["NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000"]
    assert [g.total // GiB for g in frames[0].gpus] == [23, 47]  # 24564 / 49140 MiB
    assert all(g.uuid.startswith("GPU-") and g.pci_bus_id for g in frames[0].gpus)


@pytest.mark.slow
def test_memory_adds_up_on_every_frame():
    _, frames = _frames(times=[float(t) for t in range(0, 6000, 3)])
    for f in frames:
        for g in f.gpus:
            assert g.used + g.free == g.total - g.reserved
            assert g.free >= 0 and g.reserved > 0
            known = sum(p.used for p in g.processes if p.used is not None)
            assert 0 < g.used - known <= 256 * MiB  # some memory nobody is named for
            for p in g.processes:
                assert p.info is not None and p.info.visibility == VISIBLE
                assert p.info.pid == p.pid and p.info.cmdline and p.info.user
                assert p.info.start_time <= f.time
        for a in f.agents:
            procs = [p for _, p in f.all_processes() if p.identity == a.identity]
            assert len(procs) == 1 and procs[0].has_agent
            (dev,) = a.devices
            assert procs[0].used >= dev.reserved >= dev.allocated >= 0
            assert dev.peak_allocated >= dev.allocated
            assert 0 <= dev.inactive_split <= dev.reserved - dev.allocated
            b = dev.buckets
            assert all(getattr(b, n) >= 0 for n in BUCKET_NAMES)
            assert b.weights + b.gradients + b.optimizer_state + b.other_allocated == dev.allocated
            assert b.cached_free == dev.reserved - dev.allocated
            assert b.outside_pytorch == procs[0].used - dev.reserved
            gpu = next(g for g, p in f.all_processes() if p is procs[0])
            assert dev.gpu_uuid == gpu.uuid  # matched by UUID, not by "cuda:N"


def test_the_n_a_process_stays_none():
    _, frames = _frames(times=[0, 100, 1000])
    for f in frames:
        graphics = [p for _, p in f.all_processes() if p.used is None]
        assert len(graphics) == 1
        assert graphics[0].kinds == ("graphics",) and graphics[0].info.name == "Xorg"


def test_the_jupyter_kernel_holds_3_gib_idle_from_before_the_session():
    _, frames = _frames(times=[0, 60, 600, 3600])
    pids = set()
    for f in frames:
        ((gpu, kernel),) = _by_command(f, "ipykernel_launcher")
        assert kernel.used == KERNEL_BYTES == 3 * GiB and kernel.sm == 0
        assert not kernel.has_agent
        cmd = kernel.info.cmdline
        assert cmd[:4] == ("/usr/bin/python3", "-m", "ipykernel_launcher", "-f")
        assert cmd[4].startswith("/home/") and "/.local/share/jupyter/runtime/kernel-" in cmd[4]
        assert cmd[4].endswith(".json")
        assert T0 - kernel.info.start_time > 3 * 3600
        pids.add(kernel.identity)
    assert len(pids) == 1


def test_the_training_run_ramps_up_in_steps_and_plateaus_busy():
    _, frames = _frames(times=[t / 2 for t in range(0, 240)])
    assert not _by_command(frames[0], "train.py")  # starts at TRAIN_START
    used = []
    for f in frames:
        found = _by_command(f, "train.py")
        used.append(found[0][1].used if found else 0)
    levels = sorted(set(used[: int(2 * (TRAIN_START + 12))]))
    assert len(levels) >= 5  # context, four weight shards, then training
    plateau = used[60:]
    assert max(plateau) - min(plateau) < 256 * MiB  # reserved does not breathe
    assert 14 * GiB < plateau[-1] < 20 * GiB
    gpu, proc = _by_command(frames[-1], "train.py")[0]
    assert gpu.index == 0 and proc.sm >= 85 and proc.has_agent
    assert proc.info.cmdline[:2] == ("python", "train.py")
    (report,) = _agent_for(frames[-1], proc)
    b = report.devices[0].buckets
    assert b.optimizer_state == 2 * b.weights == 2 * b.gradients  # Adam
    assert report.allocator_settings.get("expandable_segments") is False


def test_steps_advance_about_once_a_second_with_step_events():
    src, frames = _frames(times=range(0, 121))
    steps, events = [], []
    for f in frames:
        for g, p in _by_command(f, "train.py"):
            (report,) = _agent_for(f, p)
            steps.append(report.step)
            events.extend(e for e in report.events if e.kind == "step")
    numbers = [e.data["step"] for e in events]
    assert numbers == list(range(1, steps[-1] + 1))  # each step reported exactly once
    assert 100 <= steps[-1] <= 130
    for e in events:
        assert set(e.data) >= {"step", "peak_allocated", "allocated_after", "duration"}
        assert e.data["peak_allocated"] > e.data["allocated_after"]
        assert 0.8 < e.data["duration"] < 1.1
        assert T0 < e.time <= T0 + 120


def _finetune_steps(times):
    src, frames = _frames(times=times)
    after, last = {}, None
    for f in frames:
        for g, p in _by_command(f, "finetune.py"):
            (report,) = _agent_for(f, p)
            last = (g, p, report)
            for e in report.events:
                if e.kind == "step":
                    after[e.data["step"]] = e.data["allocated_after"]
    return src, frames, after, last


def test_the_finetune_run_leaks_a_few_mib_per_step():
    _, _, after, (gpu, proc, report) = _finetune_steps(range(0, 301))
    assert gpu.index == 1 and proc.info.start_time < T0  # running before the session
    ks = sorted(after)
    assert len(ks) >= 150
    k0, k1 = ks[0], ks[-1]
    rate = (after[k1] - after[k0]) / (k1 - k0)
    assert 2 * MiB <= rate <= 8 * MiB
    # noisy step to step (a single pair says little), rising over any 50 steps
    assert any(after[k + 1] < after[k] for k in ks[:-1])
    assert all(after[k + 50] > after[k] for k in ks[:-50])


def test_the_finetune_run_fragments_and_the_training_run_does_not():
    src, frames = _frames(times=[0, 120, 600, 900])
    reports = {}
    for f in frames:
        for needle in ("finetune.py", "train.py"):
            for _, p in _by_command(f, needle):
                reports.setdefault(needle, []).append(_agent_for(f, p)[0].devices[0])
    ft, tr = reports["finetune.py"], reports["train.py"]
    assert ft[0].num_alloc_retries == 0  # retries start after a few minutes ...
    assert ft[2].num_alloc_retries > 0 and ft[3].num_alloc_retries > ft[2].num_alloc_retries
    assert ft[3].inactive_split > ft[0].inactive_split  # ... and the waste grows
    assert ft[3].inactive_split > 3 * GiB
    assert (ft[3].reserved - ft[3].allocated) / ft[3].reserved > 0.2
    for d in tr:  # a large stable cache, but nothing unusable: not fragmentation
        assert d.num_alloc_retries == 0 and d.inactive_split < 256 * MiB


def test_the_leaking_run_ends_in_an_oom_and_comes_back_as_a_new_process():
    src = SimulatedSource(seed=1, start_time=T0)
    run = src.finetune
    t_oom = run.first_start + run.oom_r  # session time of the OOM
    assert 1800 < t_oom < 3 * 3600
    times = [float(t) for t in range(int(t_oom) - 5, int(t_oom + run.cycle - run.oom_r) + 20)]
    ooms, seen = [], []
    for t in times:
        f = src.sample(T0 + t)
        found = _by_command(f, "finetune.py")
        seen.append((t, found[0][1].identity if found else None))
        for a in f.agents:
            ooms += [(a, e) for e in a.events if e.kind == "oom"]
        for g in f.gpus:
            assert g.free >= 0
    ((report, event),) = ooms
    assert event.data["requested"] > event.data["device_free"]
    assert set(event.data["buckets"]) == set(ALL_BUCKETS)  # what the window shows at the OOM
    assert report.devices[0].num_ooms == 1
    assert "CUDA out of memory" in event.data["message"]
    identities = [i for _, i in seen if i is not None]
    assert len(set(identities)) == 2  # a restart is a new process (new pid + start time)
    assert any(i is None for _, i in seen)  # gone for a while in between


def test_the_short_job_comes_and_goes_as_a_new_process_each_time():
    _, frames = _frames(times=range(0, 400))
    present = {}
    for t, f in enumerate(frames):
        found = _by_command(f, "eval_ckpt.py")
        if found:
            present[t] = found[0][1].identity
            assert found[0][0].index == 1
    for t in range(400):
        phase = t % SHORT_JOB_PERIOD
        assert (t in present) == (SHORT_JOB_FROM <= phase < SHORT_JOB_UNTIL), t
    assert len(set(present.values())) == 4  # 20..60, 140..180, 260..300, 380..400
    assert len({pid for pid, _start in present.values()}) == 4


def test_events_are_not_repeated_when_sampled_twice_at_the_same_time():
    src = SimulatedSource(seed=1, start_time=T0)
    src.sample(T0 + 30.0)
    again = src.sample(T0 + 30.0)
    assert all(not a.events for a in again.agents)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 12345])
def test_every_seed_fits_its_gpus(seed):
    src = SimulatedSource(seed=seed, start_time=T0)
    for t in range(0, 5 * 3600, 37):
        for g in src.sample(T0 + t).gpus:
            assert 0 <= g.free and g.used + g.free == g.total - g.reserved


def test_sample_is_cheap():
    import time

    src = SimulatedSource(seed=1, start_time=T0)
    t0 = time.perf_counter()
    for i in range(300):
        src.sample(T0 + i)
    assert (time.perf_counter() - t0) / 300 < 0.005  # far below a 100 ms tick
