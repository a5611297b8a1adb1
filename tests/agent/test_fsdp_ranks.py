"""FSDP2 (fully_shard, DTensor) with two gloo ranks on the CPU: each rank's agent
counts its own local shards as weights, gradients and optimizer state, and the
all-gathered (unsharded) parameters alive in the middle of a forward as their
own figure -- never as weights, even when the walk runs right then; per rank,
against the rank's independent counts (tests/agent/fsdp_train.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _cpu(sample):
    return {d["device"]: d for d in sample["devices"]}["cpu"]["buckets"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_fsdp2_ranks_count_their_shards_and_the_unsharded_copies(tmp_path, runtime_dir):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(HERE / "fsdp_train.py"),
            str(tmp_path),
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    assert ranks[0]["pid"] != ranks[1]["pid"]
    full_layer = (256 * 256 + 256) * 4
    for rank in ranks:
        after = _cpu(rank["sample_after"])
        assert (after["weights"], after["gradients"], after["optimizer_state"]) == (
            rank["weights"],
            rank["gradients"],
            rank["optimizer_state"],
        )
        assert rank["weights"] == 4 * full_layer // 2  # half of every layer: a shard, not the model
        during = rank["sample_in_forward"]
        assert _cpu(during)["weights"] == rank["weights"]  # the all-gathered copy is not a weight
        assert rank["unsharded_in_forward"] >= full_layer
        assert during["sharded"]["fsdp_unsharded"]["cpu"] == rank["unsharded_in_forward"]
        assert rank["sample_after"]["sharded"]["fsdp_unsharded"] == {}  # resharded after the step

        # issue 47 item 5: per module, from the local shards; saved activations without the
        # all-gathered weights (each Linear(256, 256) saves its 8 x 256 fp32 input); the scheme
        rows = {r["name"]: r for r in rank["modules"]["modules"]}
        for name, own in rank["layers"].items():
            assert {b: rows[name][b] for b in own} == own, name
            assert own["weights"] == full_layer // 2
            assert rows[name]["activations"] == 8 * 256 * 4, name
        assert during["sharded"]["scheme"] == "FSDP2" and during["sharded"]["world_size"] == 2
