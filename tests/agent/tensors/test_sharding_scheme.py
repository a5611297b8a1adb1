"""The scheme a run trains with, said in every sample (issue 47, item 5): FSDP2 and DDP
are read per rank (tests/agent/test_fsdp_ranks.py, test_ddp_run.py); DeepSpeed's ZeRO
partitions are not, and each sample of such a run says so with the stage."""

from __future__ import annotations

import torch

from vramscope.agent.protocol import Scheme
from vramscope.agent.tensors.sharded import ZERO_NOT_READ, Sharding


class DeepSpeedEngine(torch.nn.Module):
    """Shaped as deepspeed.runtime.engine.DeepSpeedEngine where the agent looks: the
    class name and ``zero_optimization_stage()`` (DeepSpeed is not installed here)."""

    def __init__(self, module, stage):
        super().__init__()
        self.module = module
        self._stage = stage

    def zero_optimization_stage(self):
        return self._stage

    def forward(self, x):
        return self.module(x)


def test_a_deepspeed_run_says_its_zero_breakdown_is_not_read(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    for stage in (1, 2, 3):
        s = Sharding()
        s.walk([DeepSpeedEngine(torch.nn.Linear(4, 4), stage)])
        report = s.report()
        assert report["scheme"] == Scheme.ZERO and report["zero_stage"] == stage
        assert report["note"] == ZERO_NOT_READ and "not read" in report["note"]
        assert report["world_size"] is None  # (no process group in this process)


def test_a_plain_model_names_no_scheme_and_sends_nothing():
    s = Sharding()
    s.walk([torch.nn.Linear(4, 4)])
    assert s.report() is None
