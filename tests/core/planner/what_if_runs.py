"""Real CPU training steps counted independently of the agent, for the what-if
tests and bench/what_if_error.py.

A step's figure is what issue 25 measures the what-if against: activations
saved for backward (every storage once, parameters excluded, counted with
saved-tensor hooks of our own for the whole step, the loss included) +
weights + gradients + optimizer state. The same count, kept per module
(module path from global forward hooks; a storage goes to the modules on
the stack where it is first saved, so a parent's figure includes its
children's), gives the "modules" item an agent would send
(``{"step", "device", "modules": [{"name", "parent", ..., "activations"}]}``)
-- only what the hooks see inside the model, never the loss outside it.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook


class MLP(nn.Module):
    def __init__(self, width: int = 512, depth: int = 4, classes: int = 10):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class Attention(nn.Module):
    """Plain attention (no SDPA): the B x heads x L x L scores are saved."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        y = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 512, d: int = 128, heads: int = 4, layers: int = 2, max_len: int = 256):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.layers = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, ids):
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def _nbytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        s = t.untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


class SavedCount:
    """Saved-tensor hooks + module path: bytes saved for backward, in all and per module."""

    def __init__(self, model: nn.Module):
        self.names = {id(m): n for n, m in model.named_modules()}
        self.parents = {}
        for n, m in model.named_modules():
            for c_name, c in m.named_children():
                self.parents[id(c)] = n
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.stack: list[int] = []
        self.seen: set[int] = set()
        self.total = 0
        self.per: dict[int, int] = {}

    def _pre(self, module, args):
        if id(module) in self.names:
            self.stack.append(id(module))

    def _post(self, module, args, output):
        if self.stack and self.stack[-1] == id(module):
            self.stack.pop()

    def _with_ancestors(self) -> set[int]:
        """The modules on the stack and every module above them by name (a container
        such as a ModuleList is never called itself)."""
        by_name = {n: m for m, n in self.names.items()}
        out = set()
        for m in self.stack:
            name = self.names[m]
            while name is not None and by_name.get(name) not in out:
                out.add(by_name[name])
                name = self.parents.get(by_name[name])
        return out

    def _pack(self, t):
        s = t.untyped_storage()
        key = s.data_ptr()
        if key and key not in self.params and key not in self.seen:
            self.seen.add(key)
            self.total += s.nbytes()
            for m in self._with_ancestors():
                self.per[m] = self.per.get(m, 0) + s.nbytes()
        return t

    def __enter__(self):
        self._hooks = [register_module_forward_pre_hook(self._pre), register_module_forward_hook(self._post)]
        self._saved = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._saved.__enter__()
        return self

    def __exit__(self, *exc):
        self._saved.__exit__(*exc)
        for h in self._hooks:
            h.remove()

    def module_rows(self) -> list[dict]:
        """The per-module figures as an agent sends them (the root is named "")."""
        return [
            {
                "name": self.names[m],
                "parent": self.parents.get(m),
                "weights": None,
                "gradients": None,
                "optimizer_state": None,
                "activations": self.per.get(m, 0),
                "shared": False,
                "why": None,
            }
            for m in self.names
            if m in self.per or self.names[m] == ""
        ]


def make(kind: str) -> nn.Module:
    torch.manual_seed(0)
    return MLP() if kind == "mlp" else TinyLM()


def batch_for(kind: str, batch: int, seq: int = 64):
    g = torch.Generator().manual_seed(batch * 1000 + seq)
    if kind == "mlp":
        return torch.randn(batch, 512, generator=g), torch.randint(0, 10, (batch,), generator=g)
    ids = torch.randint(0, 512, (batch, seq + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]


def counted_step(kind: str, batch: int, seq: int = 64) -> dict:
    """Two real training steps at (batch, seq); the second one counted."""
    model = make(kind)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    count, out_bytes = None, None
    for i in range(2):
        x, y = batch_for(kind, batch, seq)
        opt.zero_grad(set_to_none=True)
        if i == 1:
            count = SavedCount(model)
            with count:
                out = model(x)
                loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        else:
            out = model(x)
            loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        out_bytes = out.numel() * out.element_size()
        loss.backward()
        opt.step()
    params = list(model.parameters())
    weights = _nbytes(params + list(model.buffers()))
    gradients = _nbytes([p.grad for p in params if p.grad is not None])
    state = _nbytes([v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)])
    trainable = sum(p.numel() for p in {id(p): p for p in params}.values())
    return {
        "weights": weights,
        "gradients": gradients,
        "optimizer_state": state,
        "activations": count.total,
        "real": weights + gradients + state + count.total,
        "modules": {"step": 2, "device": "cpu", "modules": count.module_rows()},
        "input": {"batch": batch, "seq": None if kind == "mlp" else seq, "output_bytes": out_bytes},
        "models": [
            {
                "name": type(model).__name__,
                "params": trainable,
                "trainable": trainable,
                "dtypes": {"float32": trainable},
                "optimizer": {"class": "AdamW"},
            }
        ],
    }


def prediction_error(kind: str, batch: int, factor: int, seq: int = 64) -> dict:
    """Measure at ``batch``, predict at ``factor`` x batch, run it: the figures."""
    from vramscope.core.planner.measured_run import measure
    from vramscope.core.planner.what_if import Change, predict

    base = counted_step(kind, batch, seq)
    m = measure(
        "cpu",
        {k: base[k] for k in ("weights", "gradients", "optimizer_state")},
        input_shape=base["input"],
        models=base["models"],
        modules=base["modules"],
    )
    w = predict(m, Change(batch=batch * factor))
    real = counted_step(kind, batch * factor, seq)["real"]
    return {
        "kind": kind,
        "batch": batch,
        "factor": factor,
        "measured": base["real"],
        "modules_seen": m.activations,
        "predicted": w.peak,
        "real": real,
        "error": (w.peak - real) / real,
    }
