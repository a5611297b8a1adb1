"""Hooks on the training thread: steps, eval with autograd, checkpointing + use_cache,
model discovery for unmodified scripts, and the one-agent-per-process API."""

from __future__ import annotations

import json

import torch

import vramscope.agent as agent_api
from vramscope.agent.modules import model_hooks


def items(agent):
    agent.serving.drain()
    return [json.loads(b) for b in agent.ring.all_items()]


# ("loaded", the allocated-after-loading reading, is the phases' event: tests/agent/steps/test_phases.py)


def train(model, opt, n=3):
    for _ in range(n):
        opt.zero_grad()
        model(torch.randn(4, 16)).sum().backward()
        opt.step()


def test_optimizer_steps_are_counted_with_durations_and_a_second_optimizer_does_not_double_them(make_agent):
    agent = make_agent()
    agent.start()
    g, d = torch.nn.Linear(16, 16), torch.nn.Linear(16, 1)
    opt_g, opt_d = torch.optim.SGD(g.parameters(), lr=0.1), torch.optim.SGD(d.parameters(), lr=0.1)
    agent.watch(model=g, optimizer=opt_g)
    for _ in range(4):  # a GAN-like loop: two optimizers per iteration
        opt_g.zero_grad()
        g(torch.randn(2, 16)).sum().backward()
        opt_g.step()
        opt_d.zero_grad()
        d(torch.randn(2, 16)).sum().backward()
        opt_d.step()
    steps = [i for i in items(agent) if i["kind"] == "step"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert steps[0]["duration"] is None and all(s["duration"] > 0 for s in steps[1:])
    assert len(agent.optimizers()) == 2  # both optimizers' state counts


def test_manual_steps_take_over_from_the_hooks(make_agent):
    agent = make_agent()
    agent.start()
    m = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    agent.watch(model=m, optimizer=opt)
    for _ in range(3):  # accumulation: 3 optimizer steps per "step" the user marks
        for _ in range(3):
            train(m, opt, 1)
        agent.steps.manual_step()
    # the optimizer steps before the first step() call counted; after it, only step() does
    assert agent.steps.count == 3 + 3
    assert [i["source"] for i in items(agent) if i["kind"] == "step"][-3:] == ["manual"] * 3


def test_eval_with_autograd_is_reported_throttled_and_no_grad_is_fine(make_agent):
    agent = make_agent()
    m = torch.nn.Linear(16, 4)
    agent.watch(model=m)
    m.eval()
    with torch.no_grad():
        m(torch.randn(2, 16))
    with torch.inference_mode():
        m(torch.randn(2, 16))
    assert not [i for i in items(agent) if i["kind"] == "event" and i["event"] != "loaded"]
    for _ in range(5):
        m(torch.randn(2, 16))  # eval mode, autograd on: the trap
    events = [i for i in items(agent) if i["kind"] == "event" and i["event"] != "loaded"]
    assert [e["event"] for e in events] == ["eval_autograd"]  # once, not five times
    assert "no_grad" in events[0]["data"]["text"] and events[0]["data"]["model"] == "Linear"


class FakeHFModel(torch.nn.Module):
    """What a Hugging Face causal LM shows this check: checkpointed blocks carry a plain
    ``gradient_checkpointing`` attribute, the output is a dict that holds a cache when
    one is returned -- and the config flag that newer versions ignore in training."""

    def __init__(self, returns_cache=True, checkpointing=True):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.lin.gradient_checkpointing = checkpointing
        self.config = type("Cfg", (), {"use_cache": True})()
        self.returns_cache = returns_cache

    def forward(self, x):
        out = {"logits": self.lin(x)}
        if self.returns_cache:
            out["past_key_values"] = [(torch.zeros(1), torch.zeros(1))]
        return out


def _events(agent):
    return [i["event"] for i in items(agent) if i["kind"] == "event" and i["event"] != "loaded"]


def test_a_training_forward_with_checkpointing_that_returns_a_cache_is_reported_once(make_agent):
    agent = make_agent()
    m = FakeHFModel()
    agent.watch(model=m)
    m(torch.randn(2, 16))
    m(torch.randn(2, 16))
    assert _events(agent) == ["checkpointing_use_cache"]


def test_no_report_when_no_cache_comes_back_without_checkpointing_or_outside_training(make_agent):
    for model in (
        FakeHFModel(returns_cache=False),  # config says use_cache, forward returns none
        FakeHFModel(checkpointing=False),
    ):  # a cache without checkpointing: inference-like
        agent = make_agent()
        agent.watch(model=model)
        model(torch.randn(2, 16))
        assert _events(agent) == []
    agent = make_agent()
    m = FakeHFModel()
    agent.watch(model=m)
    with torch.no_grad():  # generation while training mode is left on
        m(torch.randn(2, 16))
    assert _events(agent) == []


def test_an_unmodified_script_gets_its_model_found_and_the_global_hooks_removed(make_agent):
    from torch.nn.modules import module as nn_module

    agent = make_agent(discover=True)
    agent.start()
    assert nn_module._global_forward_pre_hooks  # discovery is on until the first step
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
    loss_fn = torch.nn.MSELoss()  # a parameter-free top-level module: not a model
    opt = torch.optim.Adam(model.parameters())
    for _ in range(2):
        opt.zero_grad()
        loss_fn(model(torch.randn(4, 16)), torch.zeros(4, 16)).backward()
        opt.step()
    assert agent.models() == [model]
    assert not nn_module._global_forward_pre_hooks and not nn_module._global_forward_hooks
    item = agent.sample_once()
    b = {d["device"]: d["buckets"] for d in item["devices"]}["cpu"]
    params = sum(p.numel() * 4 for p in model.parameters())
    assert b["weights"] == params and b["gradients"] == params


def test_discovery_gives_up_after_enough_forwards_without_an_optimizer():
    found = []
    d = model_hooks.ModelDiscovery(found.extend)
    d.install()
    m = torch.nn.Linear(4, 4)
    try:
        with torch.no_grad():
            for _ in range(model_hooks.DISCOVERY_ROOT_CALLS):
                m(torch.randn(1, 4))
        assert found == [m] and not d.active
    finally:
        d.finish()


def test_start_is_idempotent_and_one_agent_per_process(runtime_dir):
    m = torch.nn.Linear(16, 1)
    try:
        a = agent_api.start(model=m, interval=0.1)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        b = agent_api.start(optimizer=opt)
        assert a is b is agent_api.get()
        assert len(a.models()) == 1 and len(a.optimizers()) == 1
        assert a.wait_started(5) and a.server is not None
        agent_api.step()
        assert a.steps.count == 1
    finally:
        agent_api.stop()
    assert agent_api.get() is None
