"""Per module: the bytes of the weights, gradients and optimizer state it owns.

A module owns the parameters and buffers registered on it (``named_modules``
names; a node's figure is the sum over its subtree). Each tensor counts once
by the memory it covers -- (storage, offset, bytes) -- so a tied parameter (one
tensor registered under two modules, e.g. a language model's input embedding
and output head) counts once, at its first name in ``named_parameters``
order, and both modules are marked ``shared``. Gradients and optimizer state
go to the module owning their parameter, counted once the same way.

Runs on the training thread (``.grad`` is read here: see agent/tensors/grads.py),
at the optimizer step post-hook of a sampled step, where gradients and the
optimizer's state of that step are present.
"""

from __future__ import annotations

import torch

from vramscope.agent.tensors.buckets import plain_tensors

MAX_MODULES = 512  # nodes per model sent to the monitor (the deepest are left out first)


def extent(t) -> tuple | None:
    """The memory a tensor covers: (device, storage address, byte offset, bytes); None for
    a tensor without storage (meta, a tensor subclass without one)."""
    try:
        size = t.element_size()
        storage = t.untyped_storage()
        return (t.device, storage.data_ptr(), t.storage_offset() * size, t.numel() * size)
    except (RuntimeError, NotImplementedError, AttributeError, TypeError):
        return None


def extents(t):
    """The extents of the memory a tensor holds: a wrapper subclass (a DTensor: FSDP2's
    sharded parameters, their gradients and optimizer state) by its inner tensors --
    the local shard, what this rank holds ("DTensor", pytorch.org/docs/stable/
    distributed.tensor.html)."""
    for p in plain_tensors(t):
        key = extent(p)
        if key is not None:
            yield key


class Tree:
    """One model's module names at one instant: name -> parent, and which module owns what."""

    def __init__(self, model, limit: int = MAX_MODULES):
        named = list(model.named_modules(remove_duplicate=True))
        self.ids = {id(m): name for name, m in named}  # the root is ""
        self.fingerprint = tuple((name, id(m)) for name, m in named)
        names = sorted((n for n, _ in named if n), key=lambda n: (n.count("."), n))
        self.names = names[:limit]
        self.cut = len(names) - len(self.names)
        kept = set(self.names)
        self.parent = {n: _parent(n, kept) for n in self.names}
        self.kept = kept

    def owner(self, name: str) -> str | None:
        """The node a module's figures go to: itself or its nearest kept ancestor (None: the root)."""
        while name and name not in self.kept:
            name = name.rpartition(".")[0]
        return name or None


def _parent(name: str, kept: set) -> str | None:
    head = name.rpartition(".")[0]
    while head and head not in kept:
        head = head.rpartition(".")[0]
    return head or None


def _tensor_owners(model, tree: Tree):
    """(node, tensor, is_parameter, shared) per distinct parameter and buffer, in
    ``named_parameters`` order; a tensor met again under another module marks both shared."""
    first: dict[int, str | None] = {}
    shared_nodes: set = set()
    out = []
    for kind, items in (
        (True, model.named_parameters(remove_duplicate=False)),
        (False, model.named_buffers(remove_duplicate=False)),
    ):
        for name, t in items:
            if t is None:
                continue
            node = tree.owner(name.rpartition(".")[0])
            key = id(t)
            if key in first:
                if first[key] != node:
                    shared_nodes.update((first[key], node))
                continue
            first[key] = node
            out.append((node, t, kind))
    return out, shared_nodes


def _opt_state(optimizers) -> dict[int, list]:
    """id(parameter) -> the tensors of its optimizer state."""
    out: dict[int, list] = {}
    for opt in optimizers:
        state = getattr(opt, "state", None)
        if not state:
            continue
        for p, s in list(state.items()):
            if isinstance(s, dict):
                out.setdefault(id(p), []).extend(v for v in s.values() if isinstance(v, torch.Tensor))
    return out


def static_figures(model, optimizers, tree: Tree) -> tuple[dict, set]:
    """{node: {"weights", "gradients", "optimizer_state"}} (own bytes, not yet summed
    over the subtree; node None is the root) and the nodes holding a shared tensor."""
    owners, shared = _tensor_owners(model, tree)
    state = _opt_state(optimizers)
    figures: dict = {}
    seen: dict[str, set[int]] = {"weights": set(), "gradients": set(), "optimizer_state": set()}

    def add(node, bucket, t):
        for key in extents(t):
            if key in seen[bucket]:
                continue
            seen[bucket].add(key)
            row = figures.setdefault(node, {"weights": 0, "gradients": 0, "optimizer_state": 0})
            row[bucket] += key[3]

    for node, t, is_param in owners:
        figures.setdefault(node, {"weights": 0, "gradients": 0, "optimizer_state": 0})
        add(node, "weights", t)
        if is_param:
            g = t.grad
            if g is not None:
                add(node, "gradients", g)
            for s in state.get(id(t), ()):
                add(node, "optimizer_state", s)
    return figures, shared


def subtree_sums(own: dict, tree: Tree, buckets) -> dict:
    """{name: {bucket: bytes}}: each node's own figures plus its descendants'."""
    out = {n: {b: 0 for b in buckets} for n in tree.names}
    for node, row in own.items():
        name = node
        while name is not None:
            target = out.get(name)
            if target is not None:
                for b in buckets:
                    target[b] += row.get(b, 0)
            name = tree.parent.get(name)
    return out
