"""Weights, gradients and optimizer state, in bytes, per device -- at an instant.

Two parts, so that every sample is true at its own instant (gradients are
freed by ``zero_grad(set_to_none=True)`` and made again in backward,
optimizer state appears in the first step, parameters may be added late):

- ``collect`` finds the tensors' owners: the unique parameters of the
  registered models and of the optimizers' parameter groups, the models'
  buffers (BatchNorm running statistics, registered buffers), the
  optimizers. It walks the module tree, so the agent caches its result and
  redoes it now and then (agent/tensors/registry.py), never per sample.
- ``measure`` sums, at the moment it is called, the storages those owners
  hold *now*: each parameter's and buffer's storage (weights), each
  parameter's current ``.grad`` (gradients), every tensor in each
  optimizer's current ``state`` (optimizer state). ``.grad`` is read only
  where that is safe -- the training thread, or the autograd engine inside
  one of its hooks; the agent thread passes the gradient figures of the
  ledger instead (agent/tensors/grads.py explains why).

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

WEIGHTS, GRADIENTS, OPTIMIZER_STATE = (
    Bucket.WEIGHTS.value,
    Bucket.GRADIENTS.value,
    Bucket.OPTIMIZER_STATE.value,
)
GRADIENTS_UNKNOWN = (
    "gradients and activations + temporaries n/a: a backward may have made gradients "
    "since the training thread last showed them, and it has run no hook since"
)
UNOWNED = (
    "weights and activations + temporaries n/a: an optimizer trains parameters of a model the "
    "agent has not met, whose buffers (e.g. BatchNorm statistics) are not known; it is found at "
    "its next forward, or register it with agent.watch(model=...)"
)

UNMET_STATE = (
    "optimizer state and activations + temporaries n/a: an optimizer the agent is yet to meet "
    "has stepped (it is met at its next step; or register it with agent.watch(optimizer=...))"
)


def unseen_note(n: int | None) -> str:
    """Why gradients are n/a while a backward fed parameters no walk found (agent/tensors/unseen_grads.py);
    None: a backward through none of the watched models went unchecked (the check's budget)."""
    if n is None:
        return (
            "gradients and activations + temporaries n/a: a backward ran through none of the "
            "models the agent knows and was not checked for parameters it has not met"
        )
    return (
        f"gradients and activations + temporaries n/a: a backward accumulated gradients into {n} "
        "parameters of a model the agent has not met yet (found at its optimizer's first step or "
        "its next forward; or register it with agent.watch(model=...))"
    )


NOTHING_REGISTERED = (
    "no breakdown: no model or optimizer is known yet (found at the first optimizer "
    "step, or register them with agent.watch)"
)
CHANGED = (
    "gradients and activations + temporaries n/a: gradients or optimizer state changed while "
    "the allocator was read (three tries)"
)
NOT_ALLOCATOR = (
    "activations + temporaries n/a: tensors on a device whose allocator is not read here "
    "(host memory: e.g. an optimizer's state kept on the CPU, offloaded parameters)"
)
_MAX_DEPTH = 4
_SCALAR_BYTES = 8  # a CPU optimizer scalar this small goes with its parameter's device


def plain_tensors(t, depth: int = 0):
    """The plain tensors that hold a tensor's memory: itself, or a wrapper subclass's
    inner tensors (DTensor's local shard, ...) opened with ``__tensor_flatten__``."""
    if depth > _MAX_DEPTH or not isinstance(t, torch.Tensor):
        return
    if getattr(type(t), "__tensor_flatten__", None) is not None:
        try:
            names, _ctx = t.__tensor_flatten__()
        except Exception:
            names = ()
        for name in names:
            yield from plain_tensors(getattr(t, name, None), depth + 1)
        return
    yield t


def storages(t):
    """Yield (device, storage key, nbytes, owner) for the memory a tensor holds; the
    owner (the storage, or the tensor where it has no single storage) lives as
    long as that memory."""
    for p in plain_tensors(t):
        device = p.device
        if device.type == "meta":
            continue
        try:
            storage = p.untyped_storage()
            yield str(device), storage.data_ptr(), storage.nbytes(), storage
        except Exception:  # sparse and other layouts without one storage
            yield str(device), ("id", id(p)), p.numel() * p.element_size(), p


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

    __slots__ = ("params", "buffers", "optimizers", "devices", "unowned", "models", "key", "stand_ins")

    def __init__(self, params: list, buffers: list, optimizers: list, unowned: int = 0, models: int = 0):
        self.models = models  # how many models were walked
        # parameters standing in for others, which a backward accumulates into (FSDP's unsharded)
        self.stand_ins: tuple = ()
        self.params = params  # unique parameters (models', then optimizers' own)
        self.buffers = buffers  # the models' buffers
        self.optimizers = optimizers
        self.devices = [str(p.device) for p in params]  # where each parameter lives (at the walk)
        # module parameters (nn.Parameter) an optimizer trains that no known model holds:
        # their model's buffers are not known (plain tensors, e.g. fp32 masters, have none)
        self.unowned = unowned
        # which parameters, which of them train, and where: a walk that finds another key
        # has news (``model.to(device or dtype)`` gives each parameter new memory, new
        # gradients and a new AccumulateGrad node: agent/tensors/backward.py hooks the new ones)
        self.key = tuple((id(p), p.requires_grad, self.devices[i], p.dtype) for i, p in enumerate(params))


def where_of(params) -> tuple | None:
    """(device, dtype) of a parameter (or of the first in a list): a model moved with
    ``.to()`` after registration changes it (the agent's cheap layout fingerprint)."""
    p = params[0] if isinstance(params, list) and params else params
    device = getattr(p, "device", None)
    return (device, getattr(p, "dtype", None)) if device is not None else None


def collect(models: Iterable = (), optimizers: Iterable = (), swap: dict | None = None) -> Owners:
    """``swap``: id of a parameter swapped into a module -> the parameter it stands for
    (FSDP's unsharded copies -> their shards, agent/tensors/sharded.py)."""
    swap = swap or {}
    models = [m for m in models if m is not None]
    optimizers = [o for o in optimizers if o is not None]
    params, buffers = [], []
    seen: set[int] = set()
    for m in models:
        for p in m.parameters():
            p = swap.get(id(p), p)
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        for b in m.buffers():
            if id(b) not in seen:
                seen.add(id(b))
                buffers.append(b)
    unowned = 0
    for o in optimizers:
        for p in _optimizer_params(o):
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
                unowned += isinstance(p, torch.nn.Parameter)
    return Owners(params, buffers, optimizers, unowned, len(models))


class _Counter:
    __slots__ = ("out", "seen")

    def __init__(self):
        self.out: dict[str, dict[str, int]] = {}
        self.seen: dict[str, set] = {b: set() for b in (WEIGHTS, GRADIENTS, OPTIMIZER_STATE)}

    def add(self, bucket: str, tensor, device_of=None) -> None:
        seen = self.seen[bucket]
        for device, key, nbytes, _owner in storages(tensor):
            if device_of is not None and nbytes <= _SCALAR_BYTES and device == "cpu":
                device = device_of  # a CPU-side scalar of a parameter elsewhere (Adam's ``step``)
            k = (device, key)
            if k in seen:
                continue
            seen.add(k)
            per = self.out.get(device)
            if per is None:
                per = self.out[device] = {WEIGHTS: 0, GRADIENTS: 0, OPTIMIZER_STATE: 0}
            per[bucket] += nbytes


def measure(
    owners: Owners, grads: dict[str, int] | None = None, grads_known: bool = True
) -> dict[str, dict[str, int | None]]:
    """device -> {"weights", "gradients", "optimizer_state"} in bytes now.

    A device that appears has all three keys. Without ``grads`` the gradients are
    read from ``.grad`` -- only on the training thread or inside an autograd hook.
    The agent thread passes ``grads`` (the ledger's bytes per device, agent/tensors/grads.py)
    instead, or ``grads_known=False``: then the gradients are None (not known),
    never 0.
    """
    c = _Counter()
    read = grads is None and grads_known
    for p in owners.params:
        c.add(WEIGHTS, p)
        if read:
            g = p.grad
            if g is not None:
                c.add(GRADIENTS, g)
    for b in owners.buffers:
        c.add(WEIGHTS, b)
    for o in owners.optimizers:
        # list() first: the training thread may add state while we read it
        for p, state in list(getattr(o, "state", {}).items()):
            # PyTorch's Adam/AdamW keep ``step`` as a CPU scalar tensor for a CUDA parameter
            # (unless capturable/fused): counted with the parameter's device, not as a "cpu" entry
            device = p.device
            device_of = str(device) if isinstance(p, torch.Tensor) and device.type != "cpu" else None
            for t in _state_tensors(state):
                c.add(OPTIMIZER_STATE, t, device_of)
    out: dict[str, dict[str, int | None]] = c.out
    if read:
        return out
    for device, nbytes in (grads or {}).items():
        out.setdefault(device, {WEIGHTS: 0, GRADIENTS: 0, OPTIMIZER_STATE: 0})[GRADIENTS] = nbytes
    if not grads_known:
        for per in out.values():
            per[GRADIENTS] = None
    return out


def tensor_buckets(models: Iterable = (), optimizers: Iterable = ()) -> dict[str, dict[str, int]]:
    """The three tensor buckets now (on the training thread: gradients always readable)."""
    return measure(collect(models, optimizers))


def full_buckets(
    tensor: dict[str, int] | None,
    allocated: int | None,
    reserved: int | None,
    other_unknown: str | None = None,
    grads_unknown: str = GRADIENTS_UNKNOWN,
    state_unknown: str | None = None,
) -> tuple[dict[str, int | None], str | None]:
    """The five buckets for one device, and why one is None (or None).

    ``tensor`` and ``allocated`` must be read at the same instant.
    other_allocated (activations + temporaries) = allocated - the three;
    cached_free = reserved - allocated. Unknown inputs give None, never 0; the note
    says why (``grads_unknown``, ``state_unknown``: why gradients, optimizer state are).
    """
    w = g = s = None
    if tensor is not None:
        w, g, s = (tensor.get(b) for b in TENSOR_BUCKETS)
    other = None
    note = None
    if allocated is not None and None not in (w, g, s):
        other = allocated - w - g - s
        if other < 0:
            note = (
                f"activations + temporaries n/a: weights, gradients and optimizer state add up to "
                f"{-other} bytes more than PyTorch's allocator holds (tensors from outside its "
                f"allocator, e.g. DLPack, or tensors that changed between the two readings)"
            )
            other = None
    elif tensor is not None and w is not None and (g is None or s is None):
        why = ((grads_unknown, g), (state_unknown or UNMET_STATE, s))
        note = "; ".join(text for text, value in why if value is None)
    if other_unknown is not None and w is not None:
        w = other = None
        note = other_unknown
    cached = reserved - allocated if (allocated is not None and reserved is not None) else None
    return {
        WEIGHTS: w,
        GRADIENTS: g,
        OPTIMIZER_STATE: s,
        Bucket.OTHER_ALLOCATED.value: other,
        Bucket.CACHED_FREE.value: cached,
    }, note
