"""The allocator's own picture: snapshot fixtures in PyTorch's format -> the figures
the agents tab and the fragmentation alert show."""

from __future__ import annotations

import json

import pytest

from tests.agent import snapshots as S
from tests.agent.snapshots import GiB, MiB
from vramscope.agent.allocator.allocator_watch import NO_DEVICE, AllocatorWatch
from vramscope.agent.protocol import ItemKind, Op
from vramscope.sources.demo.allocator_replay import ReplayProvider, memory_stats_dict
from vramscope.agent.allocator.segments import (
    ALLOCATED,
    FREE_SEGMENT,
    FREE_SPLIT,
    MAX_BLOCKS,
    MAX_SEGMENTS,
    MIXED,
    SnapshotUnavailable,
    summarize,
    whole_pages,
)
from vramscope.agent.allocator.stats_cuda import TorchCudaProvider


def test_fragmented_snapshot_splits_the_cache_into_slivers_and_returnable_segments():
    s = summarize(S.fragmented()["segments"], "cuda:0")
    assert s["reserved"] == 4 * 100 * MiB + 64 * MiB
    assert s["allocated"] == 4 * 20 * MiB
    assert s["free_split"] == 4 * 80 * MiB  # empty_cache() cannot return it
    assert s["free_segments"] == 64 * MiB  # empty_cache() would
    assert s["free_split"] + s["free_segments"] == s["reserved"] - s["allocated"]
    # the largest free piece is the whole free segment, not any sliver
    assert s["largest_free_block"] == 64 * MiB
    assert s["largest_request"] == 10 * MiB
    # 20 MiB pages from each segment's start: the sliver at 10-50 MiB holds one whole
    # page (20-40), the one at 60-100 MiB two -- 60 MiB of each segment's 80 MiB free
    assert s["expandable_recovers"] == 4 * 60 * MiB
    assert s["private_pools"] is None


def test_expandable_recovery_counts_only_whole_pages():
    # a 30 MiB free block starting 10 MiB into a 20 MiB page holds one whole page
    assert whole_pages(10 * MiB, 30 * MiB, 20 * MiB) == 20 * MiB
    assert whole_pages(10 * MiB, 20 * MiB, 20 * MiB) == 0
    seg = S.segment(1 << 40, [(S.A, 10 * MiB), (S.F, 30 * MiB), (S.A, 10 * MiB)])
    assert summarize([seg])["expandable_recovers"] == 20 * MiB
    # already on: nothing more to recover by turning it on (n/a, not 0)
    assert summarize([seg], expandable=True)["expandable_recovers"] is None


def test_private_pool_is_its_own_bucket_not_fragmentation():
    s = summarize(S.private_pool()["segments"])
    assert s["private_pools"] == {"reserved": 512 * MiB + 256 * MiB, "allocated": 100 * MiB, "segments": 2}
    # only the default pool's free space is fragmentation or returnable
    assert s["free_split"] == 400 * MiB and s["free_segments"] == 0
    assert s["largest_free_block"] == 400 * MiB
    pools = [seg["pool"] for seg in s["map"]]
    assert [1, 0] in pools and None in pools


def test_healthy_cache_has_no_fragmentation():
    s = summarize(S.healthy()["segments"])
    assert s["free_split"] == 0 and s["free_segments"] == 256 * MiB
    assert s["expandable_recovers"] == 0
    assert s["largest_request"] == 1 * GiB


def test_map_runs_mark_states_and_the_largest_free_block():
    s = summarize(S.fragmented()["segments"])
    first = next(seg for seg in s["map"] if seg["size"] == 100 * MiB)
    assert first["runs"] == [
        [ALLOCATED, 10 * MiB],
        [FREE_SPLIT, 40 * MiB],
        [ALLOCATED, 10 * MiB],
        [FREE_SPLIT, 40 * MiB],
    ]
    assert first["largest_free"] == 40 * MiB
    whole = next(seg for seg in s["map"] if seg["size"] == 64 * MiB)
    assert whole["runs"] == [[FREE_SEGMENT, 64 * MiB]]


def test_a_thousand_segments_are_summarised_within_a_bounded_size():
    snap = S.many_segments(1000, blocks_per=80)
    s = summarize(snap["segments"])
    assert s["segments"] == 1000
    assert len(s["map"]) == MAX_SEGMENTS and s["map_left_out"] == 1000 - MAX_SEGMENTS
    assert all(len(seg["runs"]) <= 2 * MAX_BLOCKS + 1 for seg in s["map"])
    assert any(run[0] == MIXED for seg in s["map"] for run in seg["runs"])
    # the map's runs still add up to each segment's size
    assert all(sum(r[1] for r in seg["runs"]) == seg["size"] for seg in s["map"])
    assert s["map_left_out_bytes"] + sum(seg["size"] for seg in s["map"]) == s["reserved"]
    assert len(json.dumps(s)) < 64 * 1024


def test_segment_holding_the_largest_free_block_is_always_on_the_map():
    segs = [S.segment((1 << 40) + i * GiB, [(S.A, 100 * MiB)]) for i in range(MAX_SEGMENTS + 5)]
    segs.append(S.segment(1 << 50, [(S.A, 1 * MiB), (S.F, 50 * MiB)]))  # small, but the largest hole
    s = summarize(segs)
    assert any(seg["largest_free"] == 50 * MiB for seg in s["map"])


def test_empty_and_damaged_input_gives_figures_not_a_crash():
    assert summarize([])["largest_free_block"] is None
    s = summarize([None, {"total_size": 4 * MiB, "allocated_size": 1 * MiB}, "junk"])
    assert s["segments"] == 1 and s["allocated"] == 1 * MiB


# -- the agent's watch ---------------------------------------------------------------------------------


def _provider(snapshot, expandable=False):
    return ReplayProvider(
        [{0: memory_stats_dict(GiB, 2 * GiB)}],
        snapshot=snapshot,
        settings={"backend": "native", "expandable_segments": expandable, "max_split_size": None, "conf": ""},
    )


def test_agent_sends_a_summary_item_and_answers_a_request_now(make_agent):
    agent = make_agent(_provider(S.fragmented()))
    item = agent.allocator.take()
    [dev] = item["devices"]
    assert dev["device"] == "cuda:0" and dev["free_split"] == 320 * MiB and item["why"] is None
    assert len(agent.ring._rings[ItemKind.ALLOCATOR]) == 1
    reply = json.loads(agent.handle_request({"op": Op.ALLOCATOR}))
    assert reply["ok"] and reply["item"]["devices"][0]["largest_free_block"] == 64 * MiB


def test_largest_request_is_remembered_across_snapshots_and_from_an_oom(make_agent):
    agent = make_agent(_provider(S.fragmented()))
    watch = agent.allocator
    watch.oom_request["cuda:0"] = 3 * GiB
    assert watch.take()["devices"][0]["largest_request"] == 3 * GiB


class _NoSnapshotTorch:
    """A torch older than memory_snapshot (or one whose cuda module lacks it)."""

    class cuda:  # noqa: N801
        pass


def test_older_torch_without_the_snapshot_api_says_why(make_agent):
    with pytest.raises(SnapshotUnavailable, match="no torch.cuda.memory_snapshot"):
        TorchCudaProvider(_NoSnapshotTorch()).segments()

    class Old(ReplayProvider):
        def segments(self):
            return TorchCudaProvider(_NoSnapshotTorch()).segments()

    agent = make_agent(Old([{0: memory_stats_dict(GiB, GiB)}]))
    item = agent.allocator.take()
    assert item["devices"] == [] and "memory_snapshot" in item["why"]
    assert agent.errors == 0


def test_cpu_only_torch_takes_no_snapshot_and_creates_no_context(make_agent):
    import torch

    agent = make_agent(TorchCudaProvider(torch))
    item = agent.allocator.take()
    assert item["devices"] == [] and item["why"] == NO_DEVICE
    assert not torch.cuda.is_initialized()
    assert len(agent.ring._rings[ItemKind.ALLOCATOR]) == 0  # nothing to show yet: nothing sent


def test_a_snapshot_that_raises_is_na_with_its_reason(make_agent):
    class Broken(ReplayProvider):
        def segments(self):
            raise RuntimeError("allocator busy")

    agent = make_agent(Broken([{0: memory_stats_dict(GiB, GiB)}]))
    item = agent.allocator.take()
    assert "allocator busy" in item["why"] and agent.errors == 1


def test_watch_takes_snapshots_only_when_due(make_agent):
    agent = make_agent(_provider(S.healthy()))
    watch = AllocatorWatch(agent.measurer, agent.steps, agent.ring, agent.error, every=5.0)
    watch.maybe(100.0)
    watch.maybe(102.0)
    watch.maybe(105.5)
    assert len(agent.ring._rings[ItemKind.ALLOCATOR]) == 2
