"""The bucket breakdown is true at every instant of a real training loop.

The allocator is replayed with CUDA semantics (tests/agent/live_bytes.py:
"allocated" is exactly the bytes alive now) over real CPU torch loops. At
the end of forward, after backward and after the optimizer step, a sample
taken at that instant must give each bucket within 1 % of the true tensor
sizes, computed here from the live objects:

- weights: the models' parameters and buffers (and the optimizer's own
  parameters, e.g. fp32 masters), each storage once;
- gradients: the gradient storages alive at that instant;
- optimizer state: every tensor in the optimizers' state;
- activations + temporaries: allocated - the three.
"""

from __future__ import annotations

import pytest
import torch

from .live_bytes import LiveBytes, LiveBytesProvider, unique_bytes
from .test_buckets import TiedLM

INSTANTS = ("forward", "backward", "step")


def truth(live: LiveBytes, models, optimizers) -> dict[str, int]:
    params = [p for m in models for p in m.parameters()]
    params += [p for o in optimizers for g in o.param_groups for p in g["params"]]
    buffers = [b for m in models for b in m.buffers()]
    state = [v for o in optimizers for s in o.state.values() for v in s.values() if torch.is_tensor(v)]
    out = {"weights": unique_bytes(params + buffers),
           "gradients": unique_bytes([p.grad for p in params]),
           "optimizer_state": unique_bytes(state)}
    out["other_allocated"] = live.allocated - sum(out.values())
    return out


class Check:
    """Samples the agent at an instant and compares with the truth (1 %)."""

    def __init__(self, make_agent, live, models, optimizers):
        self.live, self.models, self.optimizers = live, models, optimizers
        self.agent = make_agent(LiveBytesProvider(live), interval=60.0)
        for m in models:
            self.agent.watch(model=m)
        for o in optimizers:
            self.agent.watch(optimizer=o)
        self.agent.start()
        assert self.agent.wait_started(5)
        self.seen: list[tuple] = []

    def __call__(self, instant: str) -> dict:
        item = self.agent.sample_once()
        got = {d["device"]: d for d in item["devices"]}["cpu"]["buckets"]
        want = truth(self.live, self.models, self.optimizers)
        for bucket, value in want.items():
            assert got[bucket] is not None, (instant, bucket, got)
            assert abs(got[bucket] - value) <= 0.01 * value, (instant, bucket, got[bucket], value)
        self.seen.append((instant, want))
        return want


def mlp_bn(width=256):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.BatchNorm1d(width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 8))


def loop(check, model, opt, steps=3, micro=1, set_to_none=True, forward=None):
    forward = forward or (lambda x: model(x).square().mean())
    for _ in range(steps):
        opt.zero_grad(set_to_none=set_to_none)
        for _ in range(micro):
            loss = forward(torch.randn(32, 64))
            check("forward")
            loss.backward()
            del loss
            check("backward")
        opt.step()
        check("step")


@pytest.mark.parametrize("set_to_none", [True, False])
def test_every_bucket_is_true_at_forward_backward_and_step(make_agent, set_to_none):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt])
        loop(check, model, opt, steps=3, set_to_none=set_to_none)
    by = {}
    for instant, want in check.seen:
        by.setdefault(instant, []).append(want)
    params = sum(p.numel() * 4 for p in model.parameters())
    # what a user must see: at the end of forward of step 2 on, activations held and
    # (set_to_none) no gradients; after backward, gradients and (nearly) no activations
    later_forward = by["forward"][1]
    assert later_forward["gradients"] == (0 if set_to_none else params)
    assert later_forward["other_allocated"] > 32 * 256 * 4 * 2
    assert by["backward"][1]["gradients"] == params
    assert by["backward"][1]["other_allocated"] < later_forward["other_allocated"]
    assert by["step"][-1]["optimizer_state"] >= 2 * params


def test_buffers_are_weights(make_agent):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        check = Check(make_agent, live, [model], [opt])
        want = check("idle")
    bn = model[1]
    buffers = sum(b.untyped_storage().nbytes() for b in bn.buffers())
    assert buffers > 0
    assert want["weights"] == sum(p.numel() * 4 for p in model.parameters()) + buffers


def test_gradient_accumulation(make_agent):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.AdamW(model.parameters())
        check = Check(make_agent, live, [model], [opt])
        loop(check, model, opt, steps=2, micro=3)
    forwards = [w for i, w in check.seen if i == "forward"]
    assert forwards[0]["gradients"] == 0 and forwards[1]["gradients"] > 0  # accumulating


def test_frozen_backbone(make_agent):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        for p in model[:3].parameters():
            p.requires_grad_(False)
        head = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.Adam(head)
        check = Check(make_agent, live, [model], [opt])
        loop(check, model, opt, steps=2)
    after = [w for i, w in check.seen if i == "step"][-1]
    assert after["gradients"] == sum(p.numel() * 4 for p in head)


def test_tied_weights(make_agent):
    live = LiveBytes()
    with live:
        model = TiedLM(vocab=500)
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt])
        idx = torch.randint(0, 500, (4, 16))
        loop(check, model, opt, steps=2, forward=lambda x: model(idx).logsumexp(-1).mean())
    assert check.seen[-1][1]["weights"] == (500 * 64 + 64 * 64 + 64) * 4  # the tied matrix once


def test_mixed_precision_autocast_bf16_copies_are_temporaries(make_agent):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt])

        def forward(x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return model(x).float().square().mean()

        loop(check, model, opt, steps=2, forward=forward)
    assert check.seen[-1][1]["weights"] == sum(p.numel() * 4 for p in model.parameters()) + \
        sum(b.untyped_storage().nbytes() for b in model.buffers())


def test_fp32_master_weights_with_a_bf16_model(make_agent):
    live = LiveBytes()
    with live:
        model = mlp_bn().to(torch.bfloat16)
        masters = [p.detach().float().requires_grad_() for p in model.parameters()]
        opt = torch.optim.Adam(masters)
        check = Check(make_agent, live, [model], [opt])
        for _ in range(2):
            opt.zero_grad()
            model.zero_grad()
            loss = model(torch.randn(32, 64, dtype=torch.bfloat16)).float().square().mean()
            check("forward")
            loss.backward()
            del loss
            for m, p in zip(masters, model.parameters()):
                m.grad = p.grad.float()
            check("backward")
            opt.step()
            with torch.no_grad():
                for m, p in zip(masters, model.parameters()):
                    p.copy_(m)
            check("step")
    params = sum(p.numel() for p in model.parameters())
    after = check.seen[-1][1]
    assert after["gradients"] == params * (2 + 4)  # bf16 gradients and fp32 master gradients
    assert after["optimizer_state"] >= 2 * 4 * params


class Growing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = mlp_bn()
        self.extra = None

    def forward(self, x):
        h = self.body(x)
        return h if self.extra is None else self.extra(h)


def test_parameters_added_late_are_counted_at_the_next_sample(make_agent):
    live = LiveBytes()
    with live:
        model = Growing()
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt])
        loop(check, model, opt, steps=1)
        model.extra = torch.nn.Linear(8, 512)
        opt.add_param_group({"params": list(model.extra.parameters())})
        check("idle")  # at once: no waiting for a walk schedule
        loop(check, model, opt, steps=1)


def test_a_second_model_registered_mid_run(make_agent):
    live = LiveBytes()
    with live:
        gen, disc = mlp_bn(), torch.nn.Sequential(torch.nn.Linear(8, 128), torch.nn.ReLU(),
                                                  torch.nn.Linear(128, 1))
        opt_g = torch.optim.Adam(gen.parameters())
        check = Check(make_agent, live, [gen], [opt_g])
        loop(check, gen, opt_g, steps=1)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.1, momentum=0.9)
        check.agent.watch(model=disc, optimizer=opt_d)
        check.models.append(disc)
        check.optimizers.append(opt_d)
        for _ in range(2):
            opt_d.zero_grad()
            loss = disc(gen(torch.randn(16, 64)).detach()).mean()
            check("forward")
            loss.backward()
            del loss
            check("backward")
            opt_d.step()
            check("step")


def test_a_sample_while_backward_runs_never_reads_gradients_mid_write(make_agent):
    """The autograd engine assigns .grad without the GIL: a sample taken during
    backward keeps the gradients read before it, and reads them again after."""
    during = []

    class Probe(torch.nn.Module):  # a model that samples the agent halfway through its backward
        def __init__(self):
            super().__init__()
            self.a, self.b = mlp_bn()[:3], torch.nn.Linear(256, 8)
            self.agent = None

        def forward(self, x):
            h = self.a(x)
            h.register_hook(lambda g: during.append(self.agent.sample_once()))
            return self.b(h)

    live = LiveBytes()
    with live:
        model = Probe()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        check = Check(make_agent, live, [model], [opt])
        model.agent = check.agent
        loop(check, model, opt, steps=2)
    assert len(during) == 2
    for item in during:
        cpu = {d["device"]: d for d in item["devices"]}["cpu"]["buckets"]
        assert cpu["gradients"] == 0  # as read at the end of forward (set_to_none), not half-written


def test_without_a_registered_model_gradients_are_read_on_the_training_thread_after_each_step(make_agent):
    """Only the optimizer is registered: backward cannot be seen, so the agent thread
    never reads .grad; the step hook reads them after each update instead."""
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        agent = make_agent(LiveBytesProvider(live), interval=60.0)
        agent.watch(optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        loop(lambda instant: None, model, opt, steps=2, set_to_none=False)
        item = agent.sample_once()
    cpu = {d["device"]: d for d in item["devices"]}["cpu"]["buckets"]
    assert cpu["gradients"] == sum(p.numel() * 4 for p in model.parameters())
