"""The fragmentation alert on the allocator's own picture: what it must flag (slivers
inside partly used segments), what it must not (a cache of whole free segments, a
CUDA graph's private pool), and how much expandable segments would recover."""

from __future__ import annotations

import dataclasses

from tests.agent import snapshots as S
from vramscope.agent.allocator.segments import summarize
from vramscope.core.detectors import Diagnostics

from .scenarios import GiB, agent, device, frame, gpu, proc, T0

PID = 500


def _feed(snapshot, allocated, reserved, inactive_split, n=4, settings=None):
    engine = Diagnostics()
    summary = summarize(snapshot["segments"], "cuda:0")
    alerts = []
    for i in range(n):
        report = agent(PID, [device(allocated, reserved, inactive_split)], settings=settings, t=i * 5)
        report = dataclasses.replace(report, allocator={"t": T0 + i * 5, "devices": {"cuda:0": summary}})
        alerts = engine.feed(
            frame(i * 5, [gpu([proc(PID, 14 * GiB, sm=90, has_agent=True)], util=90)], [report])
        )
    return [a for a in alerts if a.kind == "fragmentation"]


def _scaled(snapshot, factor):
    """The fixture with every size multiplied (the rule's thresholds are in GiB)."""
    for seg in snapshot["segments"]:
        seg["total_size"] *= factor
        for b in seg["blocks"]:
            b["size"] *= factor
            b["requested_size"] *= factor
    return snapshot


def test_slivers_in_partly_used_segments_flag_with_what_expandable_segments_recovers():
    snap = _scaled(S.fragmented(), 10)  # 3.2 GiB free in slivers, 640 MiB a whole free segment
    s = summarize(snap["segments"])
    [alert] = _feed(snap, s["allocated"], s["reserved"], inactive_split=0)  # the counter says nothing
    assert "inside partly used segments" in alert.message
    assert any("empty_cache() cannot return it" in e for e in alert.evidence)
    assert any("largest free block 640.0 MiB against a largest request of" in e for e in alert.evidence)
    # x10, every free piece starts and ends on a 20 MiB page: all 3,200 MiB recoverable
    assert "recovers about 3.1 GiB of the 3.1 GiB free in partly used segments" in alert.fix
    assert alert.data["expandable_recovers"] == s["expandable_recovers"]


def test_a_cache_of_whole_free_segments_is_not_fragmentation_even_if_the_counter_is_high():
    segs = [S.segment((1 << 40) + i * 8 * GiB, [(S.A, 2 * GiB)]) for i in range(4)]
    segs += [S.segment((1 << 44) + i * 8 * GiB, [(S.F, 2 * GiB)]) for i in range(5)]
    snap = S.snapshot(segs)
    assert _feed(snap, 8 * GiB, 18 * GiB, inactive_split=6 * GiB) == []


def test_a_cuda_graph_private_pool_is_not_fragmentation():
    segs = [
        S.segment(1 << 40, [(S.A, 8 * GiB)]),
        S.segment(1 << 44, [(S.A, 1 * GiB), (S.F, 5 * GiB)], pool=(1, 0)),
    ]
    assert _feed(S.snapshot(segs), 9 * GiB, 14 * GiB, inactive_split=5 * GiB) == []


def test_with_expandable_segments_on_no_recovery_figure_is_claimed():
    snap = _scaled(S.fragmented(), 10)
    s = summarize(snap["segments"])
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    [alert] = _feed(snap, s["allocated"], s["reserved"], 0, settings=settings)
    assert "already on" in alert.fix and "recovers about" not in alert.fix


def test_a_stale_snapshot_leaves_the_rule_on_the_counters():
    snap = _scaled(S.fragmented(), 10)
    s = summarize(snap["segments"])
    engine = Diagnostics()
    for i in range(4):
        report = dataclasses.replace(
            agent(PID, [device(s["allocated"], s["reserved"], 0)], t=i * 5 + 600),
            allocator={"t": T0, "devices": {"cuda:0": s}},
        )
        alerts = engine.feed(frame(i * 5, [gpu([proc(PID, 14 * GiB, sm=90, has_agent=True)])], [report]))
    assert [a for a in alerts if a.kind == "fragmentation"] == []  # inactive_split 0: nothing
