"""Weights, gradients and optimizer state, in bytes, per device -- at an instant.

Two parts, so that every sample is true at its own instant (gradients are
freed by ``zero_grad(set_to_none=True)`` and made again in backward,
optimizer state appears in the first step, parameters may be added late):

- ``collect`` finds the tensors' owners: the unique parameters of the
  registered models and of the optimizers' parameter groups, the models'
  buffers (BatchNorm running statistics, registered buffers), the
  optimizers. It walks the module tree, so the agent caches its result and
  redoes it now and then (agent/core.py), never per sample.
- ``measure`` sums, at the moment it is called, the storages those owners
  hold *now*: each parameter's and buffer's storage (weights), each
  parameter's current ``.grad`` (gradients), every tensor in each
  optimizer's current ``state`` (optimizer state).

Every tensor is counted by its storage, once: tied embeddings, shared
parameters, views into a flat buffer (FSDP, DDP gradient buckets) and a
state tensor reused across parameters are one storage each. Tensor
subclasses (DTensor, torchao's 8-bit optimizer state, ...) are opened with
``__tensor_flatten__`` so their inner tensors are what counts. Meta tensors
hold no memory and are skipped.

``full_buckets`` adds the allocator's figures read at the same instant:
activations + temporaries = allocated - the three; when the tensors add up
to more than the allocator holds, that bucket is None with the reason,
never a clamped 0.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from vramscope.agent.protocol import TENSOR_BUCKETS, Bucket

WEIGHTS, GRADIENTS, OPTIMIZER_STATE = Bucket.WEIGHTS.value, Bucket.GRADIENTS.value, Bucket.OPTIMIZER_STATE.value
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
        for v in list(value.values()):
            yield from _state_tensors(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _state_tensors(v, depth + 1)


def _optimizer_params(optimizer):
    for group in list(getattr(optimizer, "param_groups", ())):
        yield from group.get("params", ())


class Owners:
    """What ``collect`` found: the tensors' owners, reused by every ``measure``."""

    __slots__ = ("params", "buffers", "optimizers")

    def __init__(self, params: list, buffers: list, optimizers: list):
        self.params = params  # unique parameters (models', then optimizers' own)
        self.buffers = buffers  # the models' buffers
        self.optimizers = optimizers


def collect(models: Iterable = (), optimizers: Iterable = ()) -> Owners:
    models = [m for m in models if m is not None]
    optimizers = [o for o in optimizers if o is not None]
    params, buffers = [], []
    seen: set[int] = set()
    for m in models:
        for p in m.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        for b in m.buffers():
            if id(b) not in seen:
                seen.add(id(b))
                buffers.append(b)
    for o in optimizers:
        for p in _optimizer_params(o):
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    return Owners(params, buffers, optimizers)


class _Counter:
    __slots__ = ("out", "seen")

    def __init__(self):
        self.out: dict[str, dict[str, int]] = {}
        self.seen: dict[str, set] = {b: set() for b in (WEIGHTS, GRADIENTS, OPTIMIZER_STATE)}

    def add(self, bucket: str, tensor) -> None:
        seen = self.seen[bucket]
        for device, key, nbytes in _storages(tensor):
            k = (device, key)
            if k in seen:
                continue
            seen.add(k)
            per = self.out.get(device)
            if per is None:
                per = self.out[device] = {WEIGHTS: 0, GRADIENTS: 0, OPTIMIZER_STATE: 0}
            per[bucket] += nbytes


def measure(owners: Owners, grads_readable=None) -> tuple[dict[str, dict[str, int]], bool]:
    """(device -> {"weights", "gradients", "optimizer_state"} in bytes now, gradients read).

    A device that appears has all three keys. Called from the agent thread:
    ``grads_readable()`` says whether ``.grad`` may be read now -- not while the
    autograd engine, which runs without the GIL, may be assigning it. When it
    says no, the gradients are left out (0) and the second value is False.
    """
    c = _Counter()
    grads = True
    for p in owners.params:
        c.add(WEIGHTS, p)
        if grads and grads_readable is not None and not grads_readable():
            grads = False
        if grads:
            g = p.grad
            if g is not None:
                c.add(GRADIENTS, g)
    for b in owners.buffers:
        c.add(WEIGHTS, b)
    for o in owners.optimizers:
        # list() first: the training thread may add state while we read it
        for state in list(getattr(o, "state", {}).values()):
            for t in _state_tensors(state):
                c.add(OPTIMIZER_STATE, t)
    return c.out, grads


def tensor_buckets(models: Iterable = (), optimizers: Iterable = ()) -> dict[str, dict[str, int]]:
    """The three tensor buckets now (on the training thread: gradients always readable)."""
    return measure(collect(models, optimizers))[0]


def full_buckets(tensor: dict[str, int] | None, allocated: int | None,
                 reserved: int | None) -> tuple[dict[str, int | None], str | None]:
    """The five buckets for one device, and why one is None (or None).

    ``tensor`` and ``allocated`` must be read at the same instant.
    other_allocated (activations + temporaries) = allocated - the three;
    cached_free = reserved - allocated. Unknown inputs give None, never 0.
    """
    w = g = s = None
    if tensor is not None:
        w, g, s = (tensor.get(b) for b in TENSOR_BUCKETS)
    other = None
    note = None
    if allocated is not None and None not in (w, g, s):
        other = allocated - w - g - s
        if other < 0:
            note = (f"activations + temporaries n/a: weights, gradients and optimizer state add up to "
                    f"{-other} bytes more than PyTorch's allocator holds (tensors from outside its "
                    f"allocator, e.g. DLPack, or tensors that changed between the two readings)")
            other = None
    cached = reserved - allocated if (allocated is not None and reserved is not None) else None
    return {WEIGHTS: w, GRADIENTS: g, OPTIMIZER_STATE: s,
            Bucket.OTHER_ALLOCATED.value: other, Bucket.CACHED_FREE.value: cached}, note
