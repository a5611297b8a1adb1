"""Gradients follow their own device; tiny CPU-side optimizer scalars go with their
parameter's device (issue 23, item 12).

A model moved with ``.to()`` after registration gets new parameter memory, new
gradients and new ``AccumulateGrad`` nodes (PyTorch resets a parameter's
gradient accumulator when its device or dtype changes). On a CPU-only machine
``model.double()`` does to the gradients, and to the nodes, what a move to
another device does; the oracle (tests/agent/oracle.py) checks every sample.
A parameter on another device is simulated with a wrapper tensor subclass that
says "cuda:0" (no memory behind it on this machine).
"""

from __future__ import annotations

import pytest
import json

import torch

from vramscope.agent.tensors.buckets import NOT_ALLOCATOR, Owners, measure

from tests.agent.tensors.test_instant_buckets import mlp_bn
from tests.agent.test_oracle_loops import Run, train


@pytest.mark.slow
def test_a_model_converted_after_registration_keeps_every_sample_true(make_agent):
    """Called as ``model.forward`` (no module hook announces its backward): only the
    backward watch does -- on the new nodes."""
    with Run(make_agent) as run:
        model = mlp_bn(128)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        run.start(model, optimizers=[opt], register=[model], register_opts=[opt])
        train(model, opt, steps=8, forward=model.forward)
        model.double()  # new storages, gradients and AccumulateGrad nodes
        train(model, opt, steps=40, forward=lambda x: model.forward(x.double()))
    run.check(min_samples=6)


class Far(torch.Tensor):
    """A tensor that says it lives on "cuda:0" (metadata only)."""

    @staticmethod
    def __new__(cls, n):
        return torch.Tensor._make_wrapper_subclass(
            cls, (n,), dtype=torch.float32, device=torch.device("cuda", 0)
        )

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(func)


class AdamLike:
    """An optimizer's state as PyTorch's Adam keeps it for a CUDA parameter: ``step`` a
    CPU float32 scalar (unless capturable/fused), the moments on the parameter's device."""

    def __init__(self, params):
        self.param_groups = [{"params": params}]
        self.state = {
            p: {"step": torch.tensor(7.0), "exp_avg": Far(p.numel()), "exp_avg_sq": Far(p.numel())}
            for p in params
        }


def test_adams_cpu_step_scalars_count_with_their_parameters_device():
    params = [Far(100), Far(10)]
    tensors = measure(Owners(params, [], [AdamLike(params)]))
    assert set(tensors) == {"cuda:0"}  # no "cpu" entry with empty buckets
    # the moments (2 x 4 bytes x 110) and the two 4-byte step scalars
    assert tensors["cuda:0"]["optimizer_state"] == 2 * 4 * 110 + 2 * 4


def test_a_device_only_the_tensors_name_says_why_it_has_no_split(make_agent):
    """Memory on a device the allocator does not cover (CPU-side state larger than a
    scalar): its own entry, with the reason the rest is n/a."""
    from vramscope.sources.demo.allocator_replay import GiB, ReplayProvider, memory_stats_dict

    agent = make_agent(ReplayProvider([{0: memory_stats_dict(3 * GiB, 4 * GiB)}], loop=True), interval=3600)
    model = torch.nn.Linear(64, 64)  # a CPU model; the allocator read is the GPU's
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 64)).sum().backward()
    opt.step()
    agent.watch(model=model, optimizer=opt)
    agent.start()
    assert agent.wait_started(5)
    item = agent.sample_once()
    cpu = {d["device"]: d for d in item["devices"]}["cpu"]
    assert cpu["buckets"]["optimizer_state"] > 0 and cpu["buckets"]["other_allocated"] is None
    assert cpu["buckets_note"] == NOT_ALLOCATOR
    json.dumps(item)
