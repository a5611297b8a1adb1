"""What the planner needs to know about each registered model, from the live objects.

Per model: parameters (unique parameter tensors, tied or shared ones counted
once), trainable parameters (``requires_grad``) and their tensor count,
bytes the parameters hold in their own dtypes (total and trainable; the
weighted mean per parameter follows from them), the dtypes, and the
optimizer that updates the model's parameters: its class name and the
settings that change its state size (momentum, amsgrad, fused/capturable).

Under FSDP2 a parameter is a DTensor whose ``numel()`` is the whole
parameter's: ``params`` stays the model's count (what the planner's
arithmetic starts from) and ``local_params`` is what this rank holds (its
shards' elements), so the two are never confused.

Computed with the bucket walk (at step boundaries, rate-limited), never per
sample. Standard library + torch only.
"""

from __future__ import annotations

OPTIMIZER_SETTINGS = ("momentum", "amsgrad", "fused", "capturable", "foreach")


def _optimizer_entry(optimizer) -> dict:
    groups = getattr(optimizer, "param_groups", None) or [{}]
    settings = {}
    for key in OPTIMIZER_SETTINGS:
        value = groups[0].get(key) if isinstance(groups[0], dict) else None
        if isinstance(value, (bool, int, float)) or value is None:
            settings[key] = value
    return {"class": type(optimizer).__name__, "module": type(optimizer).__module__, **settings}


def _local_numel(p) -> int:
    """Elements of ``p`` this rank holds: a DTensor's local shard, else all of them."""
    local = getattr(p, "_local_tensor", None)  # (DTensor; its public to_local() makes a view)
    return local.numel() if local is not None else p.numel()


def describe_models(models, optimizers, swap: dict | None = None) -> list[dict]:
    """One JSON-ready dict per model (see the module doc). ``swap``: id of a parameter
    swapped into a module -> the one it stands for (FSDP's unsharded copies, mid-forward)."""
    swap = swap or {}
    owners: dict[int, object] = {}
    for o in optimizers:
        for group in getattr(o, "param_groups", ()):
            for p in group.get("params", ()):
                owners.setdefault(id(p), o)
    out = []
    for m in models:
        seen: set[int] = set()
        params = trainable = tensors = trainable_tensors = local = 0
        nbytes = trainable_bytes = 0
        dtypes: dict[str, int] = {}
        optimizer = None
        for p in m.parameters():
            p = swap.get(id(p), p)
            if id(p) in seen:
                continue
            seen.add(id(p))
            n = p.numel()
            b = n * p.element_size()
            params += n
            local += _local_numel(p)
            nbytes += b
            tensors += 1
            key = str(p.dtype).replace("torch.", "")
            dtypes[key] = dtypes.get(key, 0) + n
            if p.requires_grad:
                trainable += n
                trainable_bytes += b
                trainable_tensors += 1
            if optimizer is None:
                optimizer = owners.get(id(p))
        out.append(
            {
                "name": type(m).__name__,
                "params": params,
                "local_params": local,  # (the shards this rank holds: FSDP2's DTensors)
                "tensors": tensors,
                "trainable": trainable,
                "trainable_tensors": trainable_tensors,
                "param_bytes": nbytes,
                "trainable_bytes": trainable_bytes,
                "bytes_per_param": nbytes / params if params else None,
                "dtypes": dtypes,
                "optimizer": _optimizer_entry(optimizer) if optimizer is not None else None,
            }
        )
    return out
