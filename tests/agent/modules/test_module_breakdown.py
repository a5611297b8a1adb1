"""Per-module figures are exact against an independent count (tests/agent/module_models.py):
weights, gradients, optimizer state and the activations saved for backward, for an MLP,
a small transformer, tied embeddings, activation checkpointing and LoRA adapters; where a
figure cannot be true it is None with why -- never a wrong number."""

from __future__ import annotations

import pytest
import torch

from tests.agent.module_models import MLP, SavedCount, TinyGPT, lora, param_count
from vramscope.agent.modules.module_sampler import FORWARD_RAISED, NOT_SEEN, TREE_CHANGED, ModuleSampler

PARAM_BUCKETS = ("weights", "gradients", "optimizer_state")


def train_until_sampled(model, batch_of, max_steps=30, sampler=None, optimizer=None, between=None):
    """Train with a sampler until it sends an item; return (item, the sampled batch, optimizer)."""
    torch.manual_seed(0)
    opt = optimizer or torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    count = [0]
    s = sampler or ModuleSampler(lambda: count[0])
    s.optimizers = lambda: [opt]
    s.attach(model)
    batches = {}
    try:
        for i in range(max_steps):
            if between is not None:
                between(i, model)
            opt.zero_grad(set_to_none=True)
            batches[count[0] + 1] = b = batch_of(i)
            model(b).float().square().mean().backward()
            opt.step()
            count[0] += 1
            if s.items:
                item = s.items.popleft()
                return item, batches[item["step"]], opt
    finally:
        s.detach_all()
    raise AssertionError("no modules item")


def rows(item):
    return {r["name"]: r for r in item["modules"]}


def check_exact(model, item, batch, opt, unavailable=()):
    got = rows(item)
    expected_params = param_count(model, opt)
    with SavedCount(model) as counted:
        model(batch)
    saved = counted.per_module()
    assert set(got) == set(expected_params)
    for name, row in got.items():
        for bucket in PARAM_BUCKETS:
            assert row[bucket] == expected_params[name][bucket], (name, bucket)
        if name in unavailable or any(name.startswith(u + ".") for u in unavailable):
            assert row["activations"] is None and "checkpointing" in row["why"], name
        else:
            assert row["activations"] == saved[name], name
            assert row["why"] is None
    return got


def tokens(i):
    g = torch.Generator().manual_seed(i)
    return torch.randint(0, 50, (4, 12), generator=g)


def test_mlp_figures_are_exact_and_a_storage_saved_twice_counts_once():
    model = MLP()
    item, batch, opt = train_until_sampled(model, lambda i: torch.randn(8, 16))
    got = check_exact(model, item, batch, opt)
    assert item["step"] == 2 and item["device"] == "cpu"
    assert got["fc1"]["weights"] == (16 * 64 + 64) * 4
    assert got["fc1"]["optimizer_state"] > 2 * got["fc1"]["weights"]  # AdamW: two moments + step
    # fc2 saves its input, the relu_ result: the storage relu_ and dropout already saved
    assert got["fc2"]["activations"] == 0
    assert all(r["parent"] is None for r in got.values())


def test_small_transformer_attention_and_mlp_blocks_exact_with_the_tree_below():
    model = TinyGPT(layers=2)
    item, batch, opt = train_until_sampled(model, tokens)
    got = check_exact(model, item, batch, opt)
    assert got["h.1.attn"]["parent"] == "h.1" and got["h.1"]["parent"] == "h"
    attn = got["h.0.attn"]["activations"]
    assert attn >= 4 * 4 * 12 * 12 * 4  # at least the softmax of 4 heads x 12 x 12 (fp32)
    assert got["h"]["activations"] == got["h.0"]["activations"] + got["h.1"]["activations"]


def test_tied_embeddings_are_counted_once_and_marked_shared():
    model = TinyGPT(layers=1, tied=True)
    item, batch, opt = train_until_sampled(model, tokens)
    got = check_exact(model, item, batch, opt)
    assert got["wte"]["shared"] and got["lm_head"]["shared"]
    assert got["wte"]["weights"] == 50 * 32 * 4 and got["lm_head"]["weights"] == 0
    assert not got["ln_f"]["shared"]


@pytest.mark.parametrize("reentrant", [False, True])
def test_activation_checkpointing_says_why_for_the_checkpointed_block_and_counts_the_rest(reentrant):
    model = TinyGPT(layers=2, checkpointed={1}, reentrant=reentrant)
    item, batch, opt = train_until_sampled(model, tokens)
    got = check_exact(model, item, batch, opt, unavailable=("h.1",))
    assert got["h.0"]["activations"] > 0
    assert got["h.1"]["weights"] == got["h.0"]["weights"]


def test_lora_adapters_frozen_base_has_weights_but_no_gradients_or_optimizer_state():
    model = lora(TinyGPT(layers=1))
    item, batch, opt = train_until_sampled(model, tokens)
    got = check_exact(model, item, batch, opt)
    base, a = got["h.0.attn.qkv.base"], got["h.0.attn.qkv.lora_a"]
    assert base["weights"] > 0 and base["gradients"] == 0 and base["optimizer_state"] == 0
    assert a["gradients"] == a["weights"] == 32 * 4 * 4


def test_a_no_grad_evaluation_is_not_the_sampled_forward():
    model = MLP()

    def evaluate_first(i, m):
        with torch.no_grad():
            m(torch.randn(8, 16))

    item, batch, opt = train_until_sampled(model, lambda i: torch.randn(8, 16), between=evaluate_first)
    check_exact(model, item, batch, opt)


def test_a_hook_that_raises_gives_reasons_and_the_training_goes_on(monkeypatch):
    import vramscope.agent.modules.module_sampler as ms

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(ms, "SavedRecorder", broken)
    model = MLP()
    item, _, _ = train_until_sampled(model, lambda i: torch.randn(8, 16))
    got = rows(item)
    assert all(r["activations"] is None and "boom" in r["why"] for r in got.values())
    assert got["fc1"]["weights"] == (16 * 64 + 64) * 4  # what could be read still is
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None


def test_a_module_tree_changing_mid_step_makes_activations_unavailable():
    model = MLP()

    class Swap(torch.nn.Module):
        def forward(self, x):
            return x

    count = [0]
    s = ModuleSampler(lambda: count[0])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    s.optimizers = lambda: [opt]
    s.attach(model)
    for i in range(3):
        opt.zero_grad()
        model(torch.randn(8, 16)).sum().backward()
        if count[0] == 1:
            model.extra = Swap()  # added between the sampled forward and the step's end
        opt.step()
        count[0] += 1
    s.detach_all()
    item = s.items.popleft()
    got = rows(item)
    assert "extra" in got and got["extra"]["weights"] == 0
    assert all(r["activations"] is None and r["why"] == TREE_CHANGED for r in got.values())


def test_a_step_without_a_hooked_forward_says_so():
    model = MLP()
    compiled_like = torch.nn.Linear(4, 4)  # the optimizer steps, the watched model never runs
    count = [0]
    s = ModuleSampler(lambda: count[0])
    opt = torch.optim.SGD(list(model.parameters()) + list(compiled_like.parameters()), lr=0.1)
    s.optimizers = lambda: [opt]
    s.attach(model)
    for i in range(4):
        compiled_like(torch.randn(2, 4)).sum().backward()
        opt.step()
        count[0] += 1
    s.detach_all()
    got = rows(s.items.popleft())
    assert all(r["activations"] is None and r["why"] == NOT_SEEN for r in got.values())
    assert got["fc1"]["weights"] == (16 * 64 + 64) * 4


def test_losses_are_bit_identical_with_every_step_sampled(monkeypatch):
    import vramscope.agent.modules.module_sampler as ms

    monkeypatch.setattr(ms, "MIN_EVERY", 1)
    monkeypatch.setattr(ms, "BUDGET", 1e9)  # every step sampled

    def run(sampled):
        torch.manual_seed(0)
        model = TinyGPT(layers=2, checkpointed={0})
        model.h[1].mlp.insert(1, torch.nn.Dropout(0.2))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        count = [0]
        s = ModuleSampler(lambda: count[0])
        s.optimizers = lambda: [opt]
        if sampled:
            s.attach(model)
        losses = []
        for i in range(6):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(tokens(i)).flatten(0, 1), tokens(i + 1).flatten())
            loss.backward()
            opt.step()
            count[0] += 1
            losses.append(loss.item().hex())
        s.detach_all()
        return losses, len(s.items)

    plain, _ = run(False)
    watched, items = run(True)
    assert watched == plain
    assert items >= 2


@pytest.mark.slow
def test_one_step_in_n_keeps_the_sampled_steps_extra_time_within_one_percent_on_average(monkeypatch):
    import vramscope.agent.modules.module_sampler as ms

    monkeypatch.setattr(ms, "BUDGET", 0.01)  # (the rule at a 1 % budget; the default is smaller)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    now, count = [0.0], [0]
    s = ModuleSampler(lambda: count[0], clock=lambda: now[0])  # the training thread's CPU time, faked
    s.optimizers = lambda: [opt]
    s.attach(model)
    sampled_at = []
    for i in range(200):
        sampled = count[0] >= s.next_step
        if sampled:
            sampled_at.append(count[0] + 1)
        now[0] += 1.3 if sampled else 1.0  # a sampled step costs 30 % more
        opt.zero_grad()
        model(torch.randn(4, 16)).sum().backward()
        opt.step()
        count[0] += 1
    s.detach_all()
    assert s.every in (30, 31)  # 0.3 extra / (1 % of a 1.0 step), rounded up
    gaps = [b - a for a, b in zip(sampled_at[1:], sampled_at[2:])]
    assert gaps and all(g in (30, 31) for g in gaps)
    extra = 0.3 * len(sampled_at) / 200
    assert extra <= 0.01 + 0.3 * 2 / 200  # within budget once the cost is known (two steps to learn it)


@pytest.mark.slow
def test_a_torch_compiled_submodule_says_why_its_activations_are_not_available():
    import torch._dynamo

    model = MLP()
    model.fc1 = torch.compile(model.fc1, backend="aot_eager")
    try:
        item, _, opt = train_until_sampled(model, lambda i: torch.randn(8, 16))
    finally:
        torch._dynamo.reset()
    got = rows(item)
    assert all(r["activations"] is None and "torch.compile" in r["why"] for r in got.values())
    assert got["fc1"]["weights"] == (16 * 64 + 64) * 4  # weights, gradients, state: still exact
    assert got["fc1"]["gradients"] == got["fc1"]["weights"]


def test_a_forward_that_raises_in_the_sampled_step_leaves_no_hooks_behind():
    model = MLP()
    fail = [True]

    def raise_once(module, args):
        if fail[0] and count[0] == 1:  # the sampled step
            fail[0] = False
            raise ValueError("user's hook")

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    count = [0]
    s = ModuleSampler(lambda: count[0])
    s.optimizers = lambda: [opt]
    s.attach(model)
    model.fc2.register_forward_pre_hook(raise_once)
    raised = 0
    for i in range(4):
        opt.zero_grad()
        try:
            model(torch.randn(8, 16)).sum().backward()
        except ValueError:
            raised += 1
            assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None
            fail[0] = False
        opt.step()
        count[0] += 1
    s.detach_all()
    assert raised == 1
    got = rows(s.items.popleft())
    assert all(r["activations"] is None and r["why"] == FORWARD_RAISED for r in got.values())
    assert s.errors == 0


def test_the_runs_own_saved_tensor_hooks_around_the_forward_are_left_in_charge():
    model = MLP()
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    count = [0]
    s = ModuleSampler(lambda: count[0])
    s.optimizers = lambda: [opt]
    s.attach(model)
    for i in range(3):
        opt.zero_grad()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(torch.randn(8, 16)).sum().backward()
        opt.step()
        count[0] += 1
    s.detach_all()
    per_step = len(packed) // 3
    assert per_step > 0 and len(packed) == 3 * per_step  # the sampled step packed through the run's hooks too
    got = rows(s.items.popleft())
    assert all(r["activations"] is None and "saved-tensor hooks" in r["why"] for r in got.values())
