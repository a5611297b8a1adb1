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


def _ranks(out, batch=8) -> list[dict]:
    out.mkdir(exist_ok=True)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(HERE / "fsdp_train.py"),
            str(out),
            "4",
            str(batch),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return [json.loads((out / f"rank{i}.json").read_text()) for i in range(2)]


def _measured(rank):
    """What ``plan --pid`` builds from a rank's agent (commands/plan_pid.py)."""
    from vramscope.core.planner.measured_run import measure

    sample = rank["sample_after"]
    cpu = {d["device"]: d for d in sample["devices"]}["cpu"]
    return measure(
        "cpu",
        cpu["buckets"],
        input_shape=sample["input"],
        models=sample["models"],
        modules=rank["modules"],
        step=sample["step"],
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fsdp2_plan_at_twice_the_batch_within_five_percent(tmp_path, runtime_dir):
    """Issue 47 item 5: the what-if from one rank's figures at batch 8, asked for batch 16,
    against what the rank measures at batch 16 (weights, gradients, optimizer state from
    the shards; activations saved for backward, without the gathered weights)."""
    from vramscope.core.planner.what_if import Change, predict

    small, large = _ranks(tmp_path / "b8", 8), _ranks(tmp_path / "b16", 16)
    for a, b in zip(small, large):
        m8, m16 = _measured(a), _measured(b)
        assert m8.batch == 8 and m16.batch == 16
        got = predict(m8, Change(batch=16))
        truth = m16.total
        assert got.peak is not None and abs(got.peak - truth) <= 0.05 * truth, (
            got.peak,
            got.peak_high,
            truth,
        )
        # the model's count is the whole model's; this rank holds half of it
        info = a["sample_after"]["models"][0]
        assert info["params"] == 4 * (256 * 256 + 256) == 2 * info["local_params"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_fsdp2_ranks_count_their_shards_and_the_unsharded_copies(tmp_path, runtime_dir):
    ranks = _ranks(tmp_path)
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


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_live_plan_of_an_fsdp2_rank_is_its_shard_and_names_the_scheme(tmp_path, runtime_dir):
    """Issue 47 item 5, the Planner tab's live plan: one rank's report (as the monitor
    decodes it) planned with the run's scheme and world size -- FSDP2 over 2 ranks,
    each rank planned as its shard -- matches what the rank holds, where the plan of
    the whole model (the form's 1 GPU) is twice that."""
    from dataclasses import replace

    from vramscope.core.planner import build_plan
    from vramscope.core.planner.compare import compare
    from vramscope.core.planner.live import live_model, live_request
    from vramscope.core.samples import AgentReport
    from vramscope.sources.agents.agent_input import sample

    for rank in _ranks(tmp_path):
        s = sample(rank["sample_after"])
        report = AgentReport(
            pid=rank["pid"],
            start_time=0.0,
            step=s.step,
            models=s.models,
            devices=s.devices,
            sharded=s.sharded,
        )
        live = live_model(report.models, report.sharded)
        assert "FSDP2 over 2 ranks" in live.describe() and "131,584 of them on this rank" in live.describe()
        request = live_request(live)
        rows = {r.label.split(" (")[0]: r for r in compare(build_plan(request), report, "cpu")}
        for label, held in (("weights", "weights"), ("gradients", "gradients")):
            assert rows[label].planned == rows[label].measured == rank[held], (label, rows[label])
        opt = rows["optimizer state"]
        assert opt.planned == opt.measured == rank["optimizer_state"], opt
        whole = {r.label: r for r in compare(build_plan(replace(request, gpus=1, fsdp=False)), report, "cpu")}
        assert whole["weights"].planned == 2 * rank["weights"]
