"""Small CPU models for the per-module tests, and an independent count of what
each module holds.

The count is written apart from the agent's code: per-module forward hooks
registered on each module (the agent uses global ones), a ``saved_tensors_hooks``
pair of its own, storages keyed by ``untyped_storage().data_ptr()``; weights,
gradients and optimizer state summed from ``named_parameters`` /
``named_buffers`` prefixes and ``optimizer.state``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(64, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        h = self.drop(self.act(self.fc1(x)))
        h = h.relu_()  # in place: the storage saved by relu_ is the dropout's output
        return self.norm(self.fc2(h))


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=50, d=32, layers=2, tied=False, checkpointed=(), reentrant=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.h = nn.ModuleList(Block(d) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        if tied:
            self.lm_head.weight = self.wte.weight
        self.checkpointed = set(checkpointed)
        self.reentrant = reentrant

    def forward(self, idx):
        x = self.wte(idx)
        for i, block in enumerate(self.h):
            if i in self.checkpointed:
                x = checkpoint(block, x, use_reentrant=self.reentrant)
            else:
                x = block(x)
        return self.lm_head(self.ln_f(x))


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update (Hu et al., 2021, arXiv:2106.09685)."""

    def __init__(self, base: nn.Linear, rank=4):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        if self.base.bias is not None:
            self.base.bias.requires_grad_(False)
        self.lora_a = nn.Linear(base.in_features, rank, bias=False)
        self.lora_b = nn.Linear(rank, base.out_features, bias=False)
        nn.init.zeros_(self.lora_b.weight)

    def forward(self, x):
        return self.base(x) + self.lora_b(self.lora_a(x))


def lora(model: TinyGPT) -> TinyGPT:
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.h:
        block.attn.qkv = LoRALinear(block.attn.qkv)
        block.attn.proj = LoRALinear(block.attn.proj)
    return model


# -- the independent count ------------------------------------------------------------------------


def _prefixes(name: str):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def param_count(model, optimizer) -> dict:
    """{module name: {"weights", "gradients", "optimizer_state"}}, each over its subtree:
    every distinct parameter or buffer goes to the modules above its first name."""
    out = {n: {"weights": 0, "gradients": 0, "optimizer_state": 0} for n, _ in model.named_modules() if n}
    done = set()
    named = list(model.named_parameters()) + list(model.named_buffers())
    for name, t in named:
        if id(t) in done:
            continue
        done.add(id(t))
        figures = {
            "weights": t.nbytes,
            "gradients": t.grad.nbytes if isinstance(t, nn.Parameter) and t.grad is not None else 0,
            "optimizer_state": sum(
                v.nbytes for v in optimizer.state.get(t, {}).values() if torch.is_tensor(v)
            ),
        }
        for prefix in _prefixes(name):
            for k, v in figures.items():
                out[prefix][k] += v
    return out


class SavedCount:
    """Bytes of distinct storages saved for backward while each module ran (innermost
    module), summed over subtrees; parameter storages left out."""

    def __init__(self, model):
        self.model = model
        self.names = {}
        self.stack = []
        self.own = {}
        self.seen = set()
        self.params = {
            t.untyped_storage().data_ptr() for t in list(model.parameters()) + list(model.buffers())
        }

    def __enter__(self):
        self.handles = []
        for name, m in self.model.named_modules():
            self.handles.append(m.register_forward_pre_hook(self._enter_module(name)))
            self.handles.append(m.register_forward_hook(self._leave_module))
        self.ctx = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)
        self.ctx.__enter__()
        return self

    def _enter_module(self, name):
        def pre(module, args):
            self.stack.append(name)

        return pre

    def _leave_module(self, module, args, output):
        self.stack.pop()

    def pack(self, t):
        s = t.untyped_storage()
        if s.data_ptr() not in self.params and s.data_ptr() not in self.seen:
            self.seen.add(s.data_ptr())
            where = self.stack[-1] if self.stack else ""
            self.own[where] = self.own.get(where, 0) + s.nbytes()
        return t

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)
        for h in self.handles:
            h.remove()

    def per_module(self) -> dict:
        out = {n: 0 for n, _ in self.model.named_modules() if n}
        for where, nbytes in self.own.items():
            if where:
                for prefix in _prefixes(where) + [where]:
                    out[prefix] += nbytes
        return out
