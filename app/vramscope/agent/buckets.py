"""Weights, gradients and optimizer state, in bytes, per device.

Every tensor is counted by its storage, once: tied embeddings, shared
parameters, views into a flat buffer (FSDP, DDP gradient buckets) and a
state tensor reused across parameters are one storage each. Tensor
subclasses (DTensor, torchao's 8-bit optimizer state, ...) are opened with
``__tensor_flatten__`` so their inner tensors are what counts. Meta tensors
hold no memory and are skipped.

The walk costs time proportional to the number of tensors, so the agent
runs it at step boundaries (and rate-limits it), never per sample.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

WEIGHTS, GRADIENTS, OPTIMIZER_STATE = "weights", "gradients", "optimizer_state"
TENSOR_BUCKETS = (WEIGHTS, GRADIENTS, OPTIMIZER_STATE)
_MAX_DEPTH = 4


def _storages(t, depth: int = 0):
    """Yield (device, storage key, nbytes) for the memory a tensor holds."""
    if depth > _MAX_DEPTH or not isinstance(t, torch.Tensor):
        return
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is not None:
        try:
            names, _ctx = t.__tensor_flatten__()
        except Exception:
            names = ()
        for name in names:
            yield from _storages(getattr(t, name, None), depth + 1)
        return
    device = t.device
    if device.type == "meta":
        return
    try:
        storage = t.untyped_storage()
        yield str(device), storage.data_ptr(), storage.nbytes()
    except Exception:  # sparse and other layouts without one storage
        yield str(device), ("id", id(t)), t.numel() * t.element_size()


def _state_tensors(value, depth: int = 0):
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _state_tensors(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _state_tensors(v, depth + 1)


def _optimizer_params(optimizer):
    for group in getattr(optimizer, "param_groups", ()):
        yield from group.get("params", ())


class _Counter:
    __slots__ = ("out", "seen")

    def __init__(self):
        self.out: dict[str, dict[str, int]] = {}
        self.seen: dict[str, set] = {b: set() for b in TENSOR_BUCKETS}

    def add(self, bucket: str, tensor) -> None:
        seen = self.seen[bucket]
        for device, key, nbytes in _storages(tensor):
            k = (device, key)
            if k in seen:
                continue
            seen.add(k)
            per = self.out.get(device)
            if per is None:
                per = self.out[device] = {b: 0 for b in TENSOR_BUCKETS}
            per[bucket] += nbytes


def tensor_buckets(models: Iterable = (), optimizers: Iterable = ()) -> dict[str, dict[str, int]]:
    """device -> {"weights", "gradients", "optimizer_state"} in bytes.

    weights: unique storages of the models' parameters (and of the parameters
    the optimizers hold, for a model that was never registered);
    gradients: unique storages of their ``.grad``; optimizer_state: every
    tensor in ``optimizer.state`` (nested containers and tensor subclasses
    included). A device that appears has all three keys.
    """
    models = [m for m in models if m is not None]
    optimizers = [o for o in optimizers if o is not None]
    c = _Counter()
    params = []
    seen_params = set()
    for m in models:
        for p in m.parameters():
            if id(p) not in seen_params:
                seen_params.add(id(p))
                params.append(p)
    for o in optimizers:
        for p in _optimizer_params(o):
            if id(p) not in seen_params:
                seen_params.add(id(p))
                params.append(p)
    for p in params:
        c.add(WEIGHTS, p)
        g = p.grad
        if g is not None:
            c.add(GRADIENTS, g)
    for o in optimizers:
        # list() first: the training thread may add state while we walk
        for state in list(getattr(o, "state", {}).values()):
            for t in _state_tensors(state):
                c.add(OPTIMIZER_STATE, t)
    return c.out


def full_buckets(tensor: dict[str, int] | None, allocated: int | None,
                 reserved: int | None) -> dict[str, int | None]:
    """The five buckets for one device: the walk's three plus the allocator's two.

    other_allocated (activations + temporaries) = allocated - the three;
    cached_free = reserved - allocated. Unknown inputs give None, never 0.
    """
    w = g = s = None
    if tensor is not None:
        w, g, s = tensor.get(WEIGHTS), tensor.get(GRADIENTS), tensor.get(OPTIMIZER_STATE)
    other = None
    if allocated is not None and None not in (w, g, s):
        other = max(0, allocated - w - g - s)
    cached = reserved - allocated if (allocated is not None and reserved is not None) else None
    return {"weights": w, "gradients": g, "optimizer_state": s,
            "other_allocated": other, "cached_free": cached}
