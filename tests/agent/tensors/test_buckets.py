"""Bucket sizes from real CPU models and optimizers."""

from __future__ import annotations

import torch

from vramscope.agent.tensors.buckets import full_buckets, tensor_buckets


def _bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def _train_one_step(model, opt):
    x = torch.randn(4, model[0].in_features if isinstance(model, torch.nn.Sequential) else 16)
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def test_adam_state_is_two_times_the_parameters_plus_its_step_counters():
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    _train_one_step(model, opt)
    params = list(model.parameters())
    b = tensor_buckets([model], [opt])["cpu"]
    assert b["weights"] == _bytes(params) == 4 * (32 * 64 + 64 + 64 * 8 + 8)
    assert b["gradients"] == b["weights"]
    steps = _bytes(s["step"] for s in opt.state.values())  # one fp32 scalar per parameter
    assert steps == 4 * len(params)
    assert b["optimizer_state"] == 2 * b["weights"] + steps


def test_sgd_momentum_state_is_one_times_the_parameters():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train_one_step(model, opt)
    b = tensor_buckets([model], [opt])["cpu"]
    assert b["optimizer_state"] == b["weights"]


def test_plain_sgd_has_no_state_and_before_backward_no_gradients():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    b = tensor_buckets([model], [opt])["cpu"]
    assert b["gradients"] == 0 and b["optimizer_state"] == 0 and b["weights"] > 0


class TiedLM(torch.nn.Module):
    def __init__(self, vocab=1000, dim=64):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.body = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, idx):
        return self.head(torch.relu(self.body(self.embed(idx))))


def test_tied_embeddings_are_counted_once():
    model = TiedLM()
    opt = torch.optim.AdamW(model.parameters())
    opt.zero_grad()
    model(torch.randint(0, 1000, (2, 8))).sum().backward()
    opt.step()
    b = tensor_buckets([model], [opt])["cpu"]
    embed = 1000 * 64 * 4
    body = (64 * 64 + 64) * 4
    assert b["weights"] == embed + body  # not 2 x embed
    assert b["gradients"] == embed + body


def test_views_of_one_storage_count_once_but_separate_storages_count_twice():
    flat = torch.zeros(1000)
    a = torch.nn.Parameter(flat[:500])
    b = torch.nn.Parameter(flat[500:])
    holder = torch.nn.Module()
    holder.a, holder.b = a, b
    assert tensor_buckets([holder], [])["cpu"]["weights"] == 4000
    holder.c = torch.nn.Parameter(torch.zeros(10))
    assert tensor_buckets([holder], [])["cpu"]["weights"] == 4040


def test_frozen_base_with_adapters_has_gradients_and_state_only_for_the_adapters():
    torch.manual_seed(0)
    base = torch.nn.Linear(256, 256)
    for p in base.parameters():
        p.requires_grad_(False)
    lora_a = torch.nn.Linear(256, 8, bias=False)
    lora_b = torch.nn.Linear(8, 256, bias=False)

    class Adapted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.base, self.a, self.b = base, lora_a, lora_b

        def forward(self, x):
            return self.base(x) + self.b(self.a(x))

    model = Adapted()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trainable)
    opt.zero_grad()
    model(torch.randn(4, 256)).sum().backward()
    opt.step()
    b = tensor_buckets([model], [opt])["cpu"]
    adapters = _bytes(trainable)
    assert adapters == 2 * 256 * 8 * 4
    assert b["weights"] == _bytes(model.parameters())  # the frozen base is weights too
    assert b["gradients"] == adapters
    assert b["optimizer_state"] == 2 * adapters + 4 * len(trainable)


def test_an_optimizer_without_a_registered_model_still_counts_its_parameters():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train_one_step(model, opt)
    assert tensor_buckets([], [opt]) == tensor_buckets([model], [opt])


def test_nested_state_containers_are_walked():
    p = torch.nn.Parameter(torch.zeros(10))

    class Odd(torch.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {})

        def step(self, closure=None):
            for group in self.param_groups:
                for q in group["params"]:
                    self.state[q]["blocks"] = [torch.zeros(5), {"inner": torch.zeros(3)}]
                    self.state[q]["qmap"] = torch.zeros(256, dtype=torch.uint8)

    opt = Odd([p])
    opt.step()
    assert tensor_buckets([], [opt])["cpu"]["optimizer_state"] == 5 * 4 + 3 * 4 + 256


def test_full_buckets_says_unknown_instead_of_zero():
    assert full_buckets(None, None, None) == (
        {
            "weights": None,
            "gradients": None,
            "optimizer_state": None,
            "other_allocated": None,
            "cached_free": None,
        },
        None,
    )
    # allocator known, no model registered: activations unknown, cache known
    b, note = full_buckets(None, 10 << 30, 12 << 30)
    assert b["other_allocated"] is None and b["cached_free"] == 2 << 30 and note is None
    b, note = full_buckets(
        {"weights": 4 << 30, "gradients": 1 << 30, "optimizer_state": 2 << 30}, 10 << 30, 12 << 30
    )
    assert b["other_allocated"] == 3 << 30 and b["cached_free"] == 2 << 30 and note is None


def test_a_negative_remainder_is_not_available_with_its_reason_never_zero():
    b, note = full_buckets(
        {"weights": 4 << 30, "gradients": 1 << 30, "optimizer_state": 2 << 30}, 6 << 30, 8 << 30
    )
    assert b["other_allocated"] is None
    assert b["weights"] == 4 << 30 and b["cached_free"] == 2 << 30  # the rest still known
    assert "1073741824 bytes more than" in note
