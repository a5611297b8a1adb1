"""Allocator statistics through the replay provider: ramp, fragmentation, OOM."""

from __future__ import annotations

import pickle

import torch

from vramscope.sources.demo import allocator_replay as replay
from vramscope.sources.demo.allocator_replay import GiB, MiB, ReplayProvider, memory_stats_dict
from vramscope.agent.allocator.allocator_settings import parse_alloc_conf, read_allocator_settings
from vramscope.agent.allocator.peak_window import PeakWindow
from vramscope.agent.allocator.stat_fields import extract
from vramscope.agent.allocator.stats import StatsReader


def test_ramp_reports_allocated_reserved_and_a_peak_that_never_misses_a_new_high():
    frames = replay.scenario_ramp(weights=2 * GiB, steps=5)
    reader = StatsReader(ReplayProvider(frames))
    seen = [reader.read("sample")["cuda:0"] for _ in frames]
    assert [s["allocated"] for s in seen[:5]] == [2 * GiB * (i + 1) // 5 for i in range(5)]
    assert all(s["reserved"] >= s["allocated"] for s in seen)
    # the first training sample: the allocator's peak rose to fixed + activations
    assert seen[5]["peak_allocated"] == 8 * GiB + 3 * GiB
    # afterwards the global peak stays put: the window peak is what the agent saw itself
    assert seen[6]["peak_allocated"] == seen[6]["allocated"] < seen[5]["peak_allocated"]
    assert seen[0]["uuid"] == "GPU-replay-0000" and seen[0]["total"] == 24 * GiB


def test_peak_windows_of_two_consumers_are_independent_and_nothing_is_reset():
    w_sample, w_step = PeakWindow(), PeakWindow()
    for w in (w_sample, w_step):
        w.observe(100, 100)
    assert w_sample.take() == (100, None)  # exact (None: no upper bound needed)
    for w in (w_sample, w_step):
        w.observe(50, 300)  # a transient of 300 happened since the previous look
    assert w_sample.take() == (300, None)
    for w in (w_sample, w_step):
        w.observe(60, 300)  # no new high: the window saw 60, its peak is at most 300
    assert w_sample.take() == (60, 300)
    assert w_step.take() == (300, None)  # the step window still spans the transient: exact
    w_sample.point(75)  # a hook's reading between two looks raises the lower bound
    w_sample.observe(70, 80)  # the user reset the peak counters: 80 is since that reset
    assert w_sample.take() == (80, 300)  # before the reset: at most the old counter
    w_sample.observe(90, 80)
    w_sample.point(80)
    assert w_sample.take() == (90, None)  # the window reached the counter: exact


def test_fragmentation_shows_in_inactive_split_retries_and_the_cache_gap():
    frames = replay.scenario_fragmentation(steps=10)
    reader = StatsReader(ReplayProvider(frames))
    seen = [reader.read("sample")["cuda:0"] for _ in frames]
    gaps = [s["reserved"] - s["allocated"] for s in seen]
    assert gaps == sorted(gaps) and gaps[-1] == 10 * 512 * MiB
    assert seen[-1]["inactive_split"] == 10 * 400 * MiB
    assert seen[-1]["num_alloc_retries"] == 3
    assert {s["allocated"] for s in seen} == {10 * GiB}


def test_cuda_malloc_async_reports_unavailable_not_zero():
    stats = memory_stats_dict(GiB, 2 * GiB, num_alloc_retries=0, num_ooms=0)
    fields = extract(stats, backend="cudaMallocAsync")
    assert fields["allocated"] == GiB and fields["reserved"] == 2 * GiB
    for name in ("inactive_split", "requested", "num_alloc_retries", "num_ooms", "alloc_count", "free_count"):
        assert fields[name] is None, name
    # a key the backend does not provide at all is None too
    assert extract({"allocated_bytes.all.current": 5}, backend="native")["reserved"] is None


def test_untouched_devices_are_not_reported():
    p = ReplayProvider([{0: memory_stats_dict(GiB, GiB), 1: {k: 0 for k in memory_stats_dict(0, 0)}}])
    assert list(StatsReader(p).read("sample")) == ["cuda:0"]


def test_allocator_settings_from_the_conf_string(monkeypatch):
    assert parse_alloc_conf("expandable_segments:True, max_split_size_mb:128") == {
        "expandable_segments": "True",
        "max_split_size_mb": "128",
    }
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:128")
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    s = read_allocator_settings(None)
    assert s["expandable_segments"] is True and s["max_split_size"] == 128 * MiB
    assert s["backend"] == "native"


def test_the_torch_provider_on_a_cpu_build_reports_no_device_and_never_inits_cuda():
    from vramscope.agent.allocator.stats_cuda import TorchCudaProvider

    reader = StatsReader(TorchCudaProvider())
    assert reader.read("sample") == {}
    assert not torch.cuda.is_initialized()


def test_try_read_is_rate_limited_and_never_waits():
    now = [0.0]
    reader = StatsReader(
        ReplayProvider(replay.scenario_ramp(), loop=True), min_gap=0.25, clock=lambda: now[0]
    )
    assert reader.try_read("step") is not None
    now[0] = 0.1
    assert reader.try_read("step") is None  # too soon
    now[0] = 0.4
    with reader._lock:  # the agent thread is mid-read: the training thread does not wait
        assert reader.try_read("step") is None
    assert reader.try_read("step") is not None


def test_an_oom_in_the_replay_becomes_an_event_with_the_breakdown(make_agent):
    agent = make_agent(ReplayProvider(replay.scenario_oom()))
    model = torch.nn.Linear(64, 64)
    agent.watch(model=model)
    for _ in range(5):
        agent.sample_once()
    agent.serving.drain()
    events = [_decode(b) for b in agent.ring.all_items()]
    ooms = [e for e in events if e.get("event") == "oom"]
    assert len(ooms) == 1
    data = ooms[0]["data"]
    assert data["source"] == "num_ooms" and data["device"] == "cuda:0"
    assert data["stats"]["num_ooms"] == 1
    b = data["buckets"]
    assert b["cached_free"] == 24 * GiB - 256 * MiB - 22 * GiB
    assert b["weights"] == 0 and b["other_allocated"] == 22 * GiB  # the model is on the CPU
    assert data["buckets_by_device"]["cpu"]["weights"] == (64 * 64 + 64) * 4
    assert data["allocated"] == 22 * GiB


def test_the_oom_observer_records_request_free_blocks_and_dumps_a_memory_viz_pickle(
    make_agent, tmp_path, monkeypatch
):
    monkeypatch.setenv("VRAMSCOPE_SNAPSHOT_DIR", str(tmp_path))
    snapshot = {
        "segments": [
            {
                "device": 0,
                "address": 0,
                "total_size": 6 * GiB,
                "stream": 0,
                "segment_type": "large",
                "allocated_size": 5 * GiB,
                "active_size": 5 * GiB,
                "blocks": [
                    {
                        "size": 4 * GiB,
                        "requested_size": 4 * GiB,
                        "address": 0,
                        "state": "active_allocated",
                        "frames": [],
                    },
                    {
                        "size": GiB,
                        "requested_size": GiB - 10,
                        "address": 4 * GiB,
                        "state": "active_allocated",
                        "frames": [],
                    },
                    {
                        "size": GiB,
                        "requested_size": GiB,
                        "address": 5 * GiB,
                        "state": "inactive",
                        "frames": [],
                    },
                ],
            }
        ],
        "device_traces": [[]],
    }
    frames = replay.scenario_oom()
    provider = ReplayProvider(frames[-1:], snapshot=snapshot, history=True)
    agent = make_agent(provider)
    agent.reader = StatsReader(provider)
    agent.sample_once()
    agent._on_oom(0, 3 * GiB, 23 * GiB, 200 * MiB)  # what the allocator calls
    agent.sample_once()  # num_ooms did not rise again: no second event
    agent.serving.drain()
    ooms = [e for e in map(_decode, agent.ring.all_items()) if e.get("event") == "oom"]
    assert len(ooms) == 1
    data = ooms[0]["data"]
    assert data["requested"] == 3 * GiB and data["device_free"] == 200 * MiB
    assert data["device_total"] == 24 * GiB and data["source"] == "observer"
    assert [b["size"] for b in data["largest_blocks"]] == [4 * GiB, GiB]
    with open(data["snapshot_path"], "rb") as f:
        raw = f.read()
    assert raw[:2] == b"\x80\x04"  # pickle protocol 4
    assert pickle.loads(raw) == snapshot


def _decode(b):
    import json

    return json.loads(b)
