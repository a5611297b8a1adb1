"""A real small torch model on the CPU: the plan's weights, gradients and
optimizer state equal the agent's measured buckets to the byte."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from planner_configs import TINY_LLAMA, TINY_QWEN2  # noqa: E402
from tiny_decoder import TinyDecoder, add_lora, train_step  # noqa: E402

from vramscope.agent.tensors.buckets import tensor_buckets  # noqa: E402
from vramscope.core.planner import PlanRequest, build_plan, shape_from_config  # noqa: E402
from vramscope.core.planner.compare import compare  # noqa: E402
from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport  # noqa: E402


def measured(model, optimizer) -> dict[str, int]:
    return tensor_buckets([model], [optimizer])["cpu"]


def planned(cfg, **kw):
    return build_plan(PlanRequest(shape=shape_from_config(cfg), mode="train", precision="fp32", **kw))


@pytest.mark.parametrize("cfg", [TINY_QWEN2, TINY_LLAMA], ids=["qwen2-tied-gqa", "llama"])
def test_full_training_adamw_matches_to_the_byte(cfg):
    torch.manual_seed(0)
    model = TinyDecoder(cfg)
    shape = shape_from_config(cfg)
    assert sum(p.numel() for p in model.parameters()) == shape.params  # tied counted once
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train_step(model, opt, cfg["vocab_size"])
    got = measured(model, opt)
    plan = planned(cfg, optimizer="adamw")
    b = plan.bucket_dict()
    assert got["weights"] == b["weights"] == 4 * shape.params
    assert got["gradients"] == b["gradients"]
    # on a CPU run the host is the device: PyTorch's per-tensor step counters count too
    host = dict(plan.host_buckets)["optimizer_state"]
    assert got["optimizer_state"] == b["optimizer_state"] + host


def test_sgd_momentum_matches_to_the_byte():
    torch.manual_seed(0)
    model = TinyDecoder(TINY_LLAMA)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    train_step(model, opt, TINY_LLAMA["vocab_size"])
    got = measured(model, opt)
    plan = planned(TINY_LLAMA, optimizer="sgd-momentum")
    assert got == {k: plan.bucket_dict()[k] for k in ("weights", "gradients", "optimizer_state")}
    assert plan.host_buckets == ()


@pytest.mark.slow
def test_lora_frozen_weights_have_no_gradients_or_state_measured():
    torch.manual_seed(0)
    model = TinyDecoder(TINY_LLAMA)
    adapters = add_lora(model, rank=4, modules=("q_proj", "v_proj"))
    opt = torch.optim.AdamW(adapters, lr=1e-3)
    train_step(model, opt, TINY_LLAMA["vocab_size"])
    got = measured(model, opt)
    plan = planned(TINY_LLAMA, optimizer="adamw", lora_rank=4, lora_modules=("q_proj", "v_proj"))
    b = plan.bucket_dict()
    n_adapters = sum(p.numel() for p in adapters)
    assert got["weights"] == b["weights"]
    assert got["gradients"] == b["gradients"] == 4 * n_adapters
    host = dict(plan.host_buckets)["optimizer_state"]
    assert got["optimizer_state"] == b["optimizer_state"] + host
    assert b["optimizer_state"] == 8 * n_adapters


def test_compare_puts_plan_beside_measurement():
    torch.manual_seed(0)
    model = TinyDecoder(TINY_QWEN2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train_step(model, opt, TINY_QWEN2["vocab_size"])
    got = measured(model, opt)
    report = AgentReport(
        pid=1, start_time=0.0, devices=(AgentDevice(device="cpu", buckets=AgentBuckets(**got)),)
    )
    rows = compare(planned(TINY_QWEN2, optimizer="adamw"), report)
    by = {r.label: r for r in rows}
    assert by["weights"].difference == 0
    assert by["gradients"].difference == 0
    assert by["optimizer state"].difference == 0
    assert by["cache / fragmentation"].measured is None  # no data stays None
