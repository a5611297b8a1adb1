"""The bucket breakdown is true at every instant of a real training loop.

The allocator is replayed with CUDA semantics (tests/agent/live_bytes.py:
"allocated" is exactly the bytes alive now) over real CPU torch loops. At
the end of forward, after backward and after the optimizer step, a sample
taken at that instant must give each bucket within 1 % of the true tensor
sizes, computed here from the live objects -- and so must a sample taken in
the middle of backward, from an autograd hook on an intermediate layer, when
about half of the gradients are there (the autograd engine runs that hook on
the training thread, where ``.grad`` may be read):

- weights: the models' parameters and buffers (and the optimizer's own
  parameters, e.g. fp32 masters), each storage once;
- gradients: the gradient storages alive at that instant;
- optimizer state: every tensor in the optimizers' state;
- activations + temporaries: allocated - the three.
"""

from __future__ import annotations

import pytest
import torch

from tests.agent.live_bytes import LiveBytes, LiveBytesProvider, agent_thread_sample, unique_bytes
from tests.agent.tensors.test_buckets import TiedLM

INSTANTS = ("forward", "mid-backward", "backward", "step")

# what torch.cuda says about its device on a CUDA build and on a ROCm build (where
# torch.version.hip is set and torch.cuda is HIP): the buckets must not care
STYLES = {
    "CUDA": {
        "uuid": "GPU-8e3a4c1b-2f5d-4e6a-9b7c-0d1e2f3a4b5c",
        "total": 24 << 30,
        "name": "NVIDIA GeForce RTX 4090",
        "runtime": "CUDA 12.4",
    },
    "ROCm": {
        "uuid": "58ff7f3c-0000-0000-0000-000000000000",
        "total": 192 << 30,
        "name": "AMD Instinct MI300X",
        "runtime": "ROCm 6.2.41133-dd7f95766",
    },
}


@pytest.fixture(params=sorted(STYLES))
def style(request):
    return request.param


def truth(live: LiveBytes, models, optimizers) -> dict[str, int]:
    params = [p for m in models for p in m.parameters()]
    params += [p for o in optimizers for g in o.param_groups for p in g["params"]]
    buffers = [b for m in models for b in m.buffers()]
    state = [v for o in optimizers for s in o.state.values() for v in s.values() if torch.is_tensor(v)]
    out = {
        "weights": unique_bytes(params + buffers),
        "gradients": unique_bytes([p.grad for p in params]),
        "optimizer_state": unique_bytes(state),
    }
    out["other_allocated"] = live.allocated - sum(out.values())
    return out


class Check:
    """Samples the agent at an instant and compares with the truth (1 %)."""

    def __init__(self, make_agent, live, models, optimizers, style="CUDA"):
        self.live, self.models, self.optimizers = live, models, optimizers
        self.style = style
        self.agent = make_agent(LiveBytesProvider(live, STYLES[style]), interval=60.0)
        for m in models:
            self.agent.watch(model=m)
        for o in optimizers:
            self.agent.watch(optimizer=o)
        self.agent.start()
        assert self.agent.wait_started(5)
        self.seen: list[tuple] = []

    def mid_backward(self, module) -> None:
        """Sample in every backward when the gradient of ``module``'s output arrives:
        the gradients of the layers after it are there, those before it are not."""

        def arm(m, args, out):
            if out.requires_grad:
                out.register_hook(lambda grad: None if self("mid-backward") else None)

        module.register_forward_hook(arm)

    def by_instant(self) -> dict[str, list[dict]]:
        by: dict[str, list[dict]] = {}
        for instant, want in self.seen:
            by.setdefault(instant, []).append(want)
        return by

    def __call__(self, instant: str) -> dict:
        item = self.agent.sample_once()
        device = {d["device"]: d for d in item["devices"]}["cpu"]
        assert device["runtime"] == STYLES[self.style]["runtime"]  # "ROCm ..." on a ROCm build
        got = device["buckets"]
        want = truth(self.live, self.models, self.optimizers)
        for bucket, value in want.items():
            assert got[bucket] is not None, (instant, bucket, got)
            assert abs(got[bucket] - value) <= 0.01 * value, (instant, bucket, got[bucket], value)
        self.seen.append((instant, want))
        return want


def mlp_bn(width=256):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(64, width),
        torch.nn.BatchNorm1d(width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, 8),
    )


def loop(check, model, opt, steps=3, micro=1, set_to_none=True, forward=None, mid=None):
    forward = forward or (lambda x: model(x).square().mean())
    if mid is not None:
        check.mid_backward(mid)
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
def test_every_bucket_is_true_at_forward_backward_and_step(make_agent, set_to_none, style):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt], style)
        loop(check, model, opt, steps=3, set_to_none=set_to_none, mid=model[2])
    by = check.by_instant()
    params = sum(p.numel() * 4 for p in model.parameters())
    # what a user must see: at the end of forward of step 2 on, activations held and
    # (set_to_none) no gradients; after backward, gradients and (nearly) no activations
    later_forward = by["forward"][1]
    assert later_forward["gradients"] == (0 if set_to_none else params)
    assert later_forward["other_allocated"] > 32 * 256 * 4 * 2
    assert by["backward"][1]["gradients"] == params
    assert by["backward"][1]["other_allocated"] < later_forward["other_allocated"]
    assert by["step"][-1]["optimizer_state"] >= 2 * params
    # mid-backward: the last two Linear layers' gradients are there, the first layers' not yet
    later = sum(p.numel() * 4 for m in (model[3], model[5]) for p in m.parameters())
    # (set_to_none=False: from the second step on the gradients stay, zeroed, and are all there)
    assert [w["gradients"] for w in by["mid-backward"]] == [later] + [later if set_to_none else params] * 2


def test_buffers_are_weights(make_agent, style):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        check = Check(make_agent, live, [model], [opt], style)
        want = check("idle")
    bn = model[1]
    buffers = sum(b.untyped_storage().nbytes() for b in bn.buffers())
    assert buffers > 0
    assert want["weights"] == sum(p.numel() * 4 for p in model.parameters()) + buffers


@pytest.mark.slow
def test_gradient_accumulation(make_agent, style):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.AdamW(model.parameters())
        check = Check(make_agent, live, [model], [opt], style)
        loop(check, model, opt, steps=2, micro=3, mid=model[2])
    by = check.by_instant()
    assert by["forward"][0]["gradients"] == 0 and by["forward"][1]["gradients"] > 0  # accumulating
    params = sum(p.numel() * 4 for p in model.parameters())
    # the first micro-batch's backward makes the gradients, the next ones add into them
    assert 0 < by["mid-backward"][0]["gradients"] < params
    assert [w["gradients"] for w in by["mid-backward"][1:3]] == [params, params]


def test_frozen_backbone(make_agent, style):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        for p in model[:3].parameters():
            p.requires_grad_(False)
        head = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.Adam(head)
        check = Check(make_agent, live, [model], [opt], style)
        loop(check, model, opt, steps=2, mid=model[4])
    after = [w for i, w in check.seen if i == "step"][-1]
    assert after["gradients"] == sum(p.numel() * 4 for p in head)
    mid = check.by_instant()["mid-backward"]
    assert [w["gradients"] for w in mid] == [sum(p.numel() * 4 for p in model[5].parameters())] * 2


def test_tied_weights(make_agent, style):
    live = LiveBytes()
    with live:
        model = TiedLM(vocab=500)
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt], style)
        idx = torch.randint(0, 500, (4, 16))
        loop(check, model, opt, steps=2, forward=lambda x: model(idx).logsumexp(-1).mean(), mid=model.embed)
    assert check.seen[-1][1]["weights"] == (500 * 64 + 64 * 64 + 64) * 4  # the tied matrix once
    # the body's gradients are there; the tied matrix's comes once both of its uses are summed
    mid = check.by_instant()["mid-backward"]
    assert [w["gradients"] for w in mid] == [(64 * 64 + 64) * 4] * 2


def test_mixed_precision_autocast_bf16_copies_are_temporaries(make_agent, style):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt], style)

        def forward(x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return model(x).float().square().mean()

        loop(check, model, opt, steps=2, forward=forward, mid=model[2])
    assert check.by_instant()["mid-backward"][0]["gradients"] > 0
    assert check.seen[-1][1]["weights"] == sum(p.numel() * 4 for p in model.parameters()) + sum(
        b.untyped_storage().nbytes() for b in model.buffers()
    )


def test_fp32_master_weights_with_a_bf16_model(make_agent, style):
    live = LiveBytes()
    with live:
        model = mlp_bn().to(torch.bfloat16)
        masters = [p.detach().float().requires_grad_() for p in model.parameters()]
        opt = torch.optim.Adam(masters)
        check = Check(make_agent, live, [model], [opt], style)
        check.mid_backward(model[2])
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
    mid = check.by_instant()["mid-backward"]
    assert [w["gradients"] for w in mid] == [
        sum(p.numel() * 2 for m in (model[3], model[5]) for p in m.parameters())
    ] * 2
    assert after["optimizer_state"] >= 2 * 4 * params


class Growing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = mlp_bn()
        self.extra = None

    def forward(self, x):
        h = self.body(x)
        return h if self.extra is None else self.extra(h)


@pytest.mark.slow
def test_parameters_added_late_are_counted_at_the_next_sample(make_agent, style):
    live = LiveBytes()
    with live:
        model = Growing()
        opt = torch.optim.Adam(model.parameters())
        check = Check(make_agent, live, [model], [opt], style)
        loop(check, model, opt, steps=1, mid=model.body[2])
        model.extra = torch.nn.Linear(8, 512)
        opt.add_param_group({"params": list(model.extra.parameters())})
        check("idle")  # at once: no waiting for a walk schedule
        loop(check, model, opt, steps=1)
    extra = sum(p.numel() * 4 for p in model.extra.parameters())
    first, second = check.by_instant()["mid-backward"]
    assert second["gradients"] - first["gradients"] == extra  # the late layer's gradients count mid-backward


def test_a_second_model_registered_mid_run(make_agent, style):
    live = LiveBytes()
    with live:
        gen, disc = (
            mlp_bn(),
            torch.nn.Sequential(torch.nn.Linear(8, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)),
        )
        opt_g = torch.optim.Adam(gen.parameters())
        check = Check(make_agent, live, [gen], [opt_g], style)
        loop(check, gen, opt_g, steps=1, mid=gen[2])
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.1, momentum=0.9)
        check.agent.watch(model=disc, optimizer=opt_d)
        check.models.append(disc)
        check.optimizers.append(opt_d)
        check.mid_backward(disc[1])
        for _ in range(2):
            opt_d.zero_grad()
            loss = disc(gen(torch.randn(16, 64)).detach()).mean()
            check("forward")
            loss.backward()
            del loss
            check("backward")
            opt_d.step()
            check("step")


def test_without_a_registered_model_the_gradients_are_noted_after_each_step(make_agent):
    """Only the optimizer is registered: the step hook notes the gradients after each
    update, and the agent thread's own sample (the ledger's figures) shows them."""
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        agent = make_agent(LiveBytesProvider(live), interval=0.05)
        agent.watch(optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        loop(lambda instant: None, model, opt, steps=2, set_to_none=False)
        item = agent_thread_sample(agent)
    cpu = {d["device"]: d for d in item["devices"]}["cpu"]["buckets"]
    assert cpu["gradients"] == sum(p.numel() * 4 for p in model.parameters())
