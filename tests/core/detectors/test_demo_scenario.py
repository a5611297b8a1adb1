"""The demo workstation (sources/demo/simulated.py) through the engine: the leftover
Jupyter kernel, the leak and the fragmentation are flagged within their time
windows; the busy training run and the short evaluation jobs are not."""

from __future__ import annotations

import pytest

from vramscope.core.detectors import Diagnostics
from vramscope.core.detectors.jupyter import NotebookHint

simulated = pytest.importorskip("vramscope.sources.demo.simulated")

T0 = 1_700_000_000.0


def first_seen(seconds, step=1.0, fine_after=None):
    src = simulated.SimulatedSource(seed=1, start_time=T0)
    engine = Diagnostics(notebook_finder=lambda pid, conn: NotebookHint(None, "test"))
    seen = {}
    alerts = []
    t = 0.0
    while t <= seconds:
        frame = src.sample(T0 + t)
        alerts = engine.feed(frame)
        for a in alerts:
            seen.setdefault((a.kind, a.severity, a.gpu), (t, a, frame))
        t += 1.0 if fine_after is not None and t >= fine_after else step
    return seen, alerts, frame, src


@pytest.fixture(scope="module")
def first_six_minutes():
    return first_seen(360)


@pytest.mark.slow
def test_leftover_kernel_flagged_then_escalated():
    seen, alerts, frame, src = first_seen(1810, step=5.0)
    t_info, info, _ = seen[("squatter", "info", 0)]
    assert 600 <= t_info <= 605  # kernel_idle_minutes = 10
    assert info.pid == src.kernel_pid and info.connection_file == src.kernel_file
    t_warn, warn, _ = seen[("squatter", "warning", 0)]
    assert 1800 <= t_warn <= 1805  # kernel_warn_minutes = 30
    assert warn.frees == 3 << 30


@pytest.mark.slow
def test_leak_flagged_within_the_first_steps(first_six_minutes):
    seen, *_ = first_six_minutes
    t, leak, _ = seen[("leak", "warning", 1)]
    assert t <= 60  # 30 steps of ~1.5 s
    assert 3.0 < leak.data["slope_bytes_per_step"] / (1 << 20) < 5.0  # 4 MiB/step scripted


def test_fragmentation_flagged_once_retries_rise(first_six_minutes):
    seen, *_ = first_six_minutes
    t, frag, _ = seen[("fragmentation", "warning", 1)]
    assert t <= 240
    assert "expandable_segments:True" in frag.fix


def test_busy_runs_and_short_jobs_are_not_flagged(first_six_minutes):
    seen, alerts, frame, src = first_six_minutes
    flagged = {a.pid for (_, _, _), (_, a, _) in seen.items()}
    gpu0 = next(g for g in frame.gpus if g.index == 0)
    train = next(p for p in gpu0.processes if p.has_agent)
    assert train.pid not in flagged
    short_jobs = {
        p.pid
        for g in frame.gpus
        for p in g.processes
        if p.info and p.info.cmdline and "eval_ckpt.py" in " ".join(p.info.cmdline)
    }
    assert not (short_jobs & flagged)
    assert {k for k, _, _ in seen} <= {"squatter", "leak", "fragmentation", "growth"}
    growing = {a.pid for (k, _, _), (_, a, _) in seen.items() if k == "growth"}
    assert growing <= {a.pid for (k, _, _), (_, a, _) in seen.items() if k == "leak"}


@pytest.mark.slow
def test_the_leaking_run_ends_in_an_oom_shown_as_critical():
    # coarse steps for the first hour, then 1 s: the demo's OOM'd process lingers only 3 s
    seen, alerts, frame, src = first_seen(4300, step=5.0, fine_after=3900)
    t, oom, _ = seen[("oom", "critical", 1)]
    assert 3600 < t < 4300
    assert any("optimizer state" in e for e in oom.evidence)
    assert "names only the last allocation" in oom.evidence[0]
    assert ("near_oom", "warning", 1) in seen and seen[("near_oom", "warning", 1)][0] < t
