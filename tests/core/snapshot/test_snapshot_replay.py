"""`vramscope snapshot`'s figures against an independent replay of generated snapshots
(Hypothesis over PyTorch's documented format) and of one written by this PyTorch's own
snapshot function (``torch.cuda._memory_viz._profile_to_snapshot``, which runs on a CPU)."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.snapshot.snapshot_format import as_groups, replay, snapshots
from vramscope.core.snapshot import reading, summary

ALL = 10**6  # every stack listed


def _summary(tmp_path, snap, at_time=None):
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    return summary.summary(reading.read(path), 0, at_time, ALL)["devices"][0]


@settings(max_examples=150)
@given(snapshots(), st.integers(0, 2 * 10**6))
def test_peak_time_and_stacks_match_an_independent_replay(tmp_path_factory, snap, at_time):
    d = _summary(tmp_path_factory.mktemp("s"), snap, at_time)
    peak, peak_time, at_peak, at = replay(snap, 0, at_time)
    assert d["peak_allocated"] == peak
    assert d["peak_time_us"] == peak_time
    assert as_groups(d["top_at_peak"]) == at_peak
    assert sum(g["bytes"] for g in d["top_at_peak"]) == peak
    assert as_groups(d["at"]["top"]) == at
    assert d["at"]["allocated"] == sum(b for b, _c in at.values())
    sizes = [g["bytes"] for g in d["top_at_peak"]]
    assert sizes == sorted(sizes, reverse=True)  # largest first


@settings(max_examples=60)
@given(snapshots())
def test_every_oom_is_listed_with_its_request(tmp_path_factory, snap):
    d = _summary(tmp_path_factory.mktemp("s"), snap)
    wanted = [e["size"] for e in snap["device_traces"][0] if e["action"] == "oom"]
    assert [o["requested"] for o in d["ooms"]] == wanted
    assert d["events"] == len(snap["device_traces"][0])


def test_what_was_alive_before_the_trace_counts_from_the_start(tmp_path):
    frames = [{"filename": "/home/ada/train.py", "line": 3, "name": "load"}]
    snap = {
        "segments": [
            {
                "device": 0,
                "address": 0,
                "total_size": 4096,
                "stream": 0,
                "segment_type": "small",
                "blocks": [
                    {
                        "address": 0,
                        "size": 1024,
                        "requested_size": 1000,
                        "state": "active_allocated",
                        "frames": frames,
                    },
                    {"address": 1024, "size": 3072, "requested_size": 0, "state": "inactive", "frames": []},
                ],
            }
        ],
        "device_traces": [
            [
                {
                    "action": "free_completed",
                    "addr": 8192,
                    "size": 512,
                    "stream": 0,
                    "time_us": 5,
                    "frames": [],
                },
                {"action": "alloc", "addr": 2048, "size": 256, "stream": 0, "time_us": 6, "frames": frames},
            ]
        ],
    }
    d = _summary(tmp_path, snap)
    assert d["allocated_before_trace"] == 1024 + 512  # the weights, and what the first entry frees
    assert d["peak_allocated"] == 1024 + 512 and d["peak_time_us"] is None  # at the start
    assert d["reserved"] == 4096 and d["allocated"] == 1024 and d["largest_free"] == 3072
    assert d["top_at_peak"][0]["site"] == "/home/ada/train.py:3 in load"


def _profiled_snapshot():
    import torch
    from torch.cuda import _memory_viz

    with torch.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True) as prof:
        x = torch.randn(128, 128)
        ys = [x @ x for _ in range(4)]
        del ys[0]
        z = torch.relu(x).sum()
        del z
    return _memory_viz._profile_to_snapshot(prof)


def test_a_snapshot_written_by_pytorchs_own_function(tmp_path):
    snap = _profiled_snapshot()
    device = len(snap["device_traces"]) - 1  # the CPU's trace comes after the CUDA devices'
    path = tmp_path / "profile.pickle"
    path.write_bytes(pickle.dumps(snap))  # what torch.cuda.memory._dump_snapshot does
    s = reading.read(path)
    d = summary.summary(s, device, None, ALL)["devices"][0]
    # PyTorch's blocks carry no address: they lie one after another from the segment's
    for seg in snap["segments"]:
        offset = seg["address"]
        for b in seg["blocks"]:
            b.setdefault("address", offset)
            offset = b["address"] + b["size"]
    peak, peak_time, at_peak, _ = replay(snap, device)
    assert d["events"] == len(snap["device_traces"][device]) > 0
    assert d["peak_allocated"] == peak > 0
    assert as_groups(d["top_at_peak"]) == at_peak
    assert any("category" in name for name in s.unknown_fields)  # a field this version does not know: kept


@settings(max_examples=80)
@given(snapshots(), st.integers(1, 9), st.integers(0, 2 * 10**6))
def test_converted_in_small_chunks_the_figures_are_the_same(tmp_path_factory, snap, chunk, at_time):
    """A big trace is converted a chunk at a time (its entries dropped as they go): at
    every chunk size, the figures are the independent replay's."""
    from vramscope.core.snapshot import building

    saved = building.CHUNK
    building.CHUNK = chunk
    try:
        d = _summary(tmp_path_factory.mktemp("s"), snap, at_time)
    finally:
        building.CHUNK = saved
    peak, peak_time, at_peak, at = replay(snap, 0, at_time)
    assert (d["peak_allocated"], d["peak_time_us"]) == (peak, peak_time)
    assert as_groups(d["top_at_peak"]) == at_peak and as_groups(d["at"]["top"]) == at
    assert [o["requested"] for o in d["ooms"]] == [
        e["size"] for e in snap["device_traces"][0] if e["action"] == "oom"
    ]
    assert [o["device_free"] for o in d["ooms"]] == [1 << 20] * len(d["ooms"])  # kept from each OOM entry
