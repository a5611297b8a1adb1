"""DDP under ``vramscope run`` with torchrun: each rank runs its own agent (the
rank interpreters inherit the run's sitecustomize; the launcher stays without
one), finds its DDP-wrapped model and
optimizer by itself, and its final dump holds that rank's own tensor sizes,
measured independently in the rank (tests/agent/ddp_train.py); nothing is printed
beyond what the script prints."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_gloo_ranks_each_report_their_own_buckets(tmp_path, runtime_dir):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramscope",
            "run",
            "--",
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(HERE / "ddp_train.py"),
            str(tmp_path),
            "12",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    dumps = {}
    for path in glob.glob(os.path.join(runtime_dir, "**", "*.final.json"), recursive=True):
        dumps[int(os.path.basename(path).split("-")[1])] = json.loads(Path(path).read_text())
    for rank in ranks:
        assert rank["pid"] in dumps, (rank, list(dumps))
        items = dumps[rank["pid"]]["items"] if isinstance(dumps[rank["pid"]], dict) else dumps[rank["pid"]]
        samples = [i for i in items if i.get("kind") == "sample"]
        last = {d["device"]: d for d in samples[-1]["devices"]}["cpu"]["buckets"]
        assert (last["weights"], last["gradients"], last["optimizer_state"]) == (
            rank["weights"],
            rank["gradients"],
            rank["optimizer_state"],
        )
        # DDP's buckets hold a second copy of the gradients (no gradient_as_bucket_view)
        assert samples[-1]["sharded"]["ddp_buckets"]["cpu"] == rank["gradients"]
        assert (samples[-1]["sharded"]["scheme"], samples[-1]["sharded"]["world_size"]) == ("DDP", 2)
    # the monitor groups the two ranks as one job (same rendezvous), in rank order
    from vramscope.core.processes.rank_groups import jobs
    from vramscope.sources.agents.agent_client import AgentClient

    client = AgentClient(
        dirs=sorted(
            {
                os.path.dirname(p)
                for p in glob.glob(os.path.join(runtime_dir, "**", "*.final.json"), recursive=True)
            }
        )
    )
    client.poll()
    (job,) = jobs(client.reports())
    assert [r.pid for r in job.ranks] == [rank["pid"] for rank in ranks]
    assert [r.rank for r in job.ranks] == [0, 1] and job.world_size == 2
    assert (
        job.held == tuple(rank["weights"] + rank["gradients"] + rank["optimizer_state"] for rank in ranks)
        and not job.heavy
    )
