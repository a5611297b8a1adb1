"""The OOM post-mortem: what was asked, what was there, why it did not fit, what would.

A pure function over plain inputs, so the agent (on the training process's
stderr at exit, with what it knows) and the monitor (in the window and
``vramscope export --format oom-report``, adding NVML's view of the GPU)
build the same report:

- ``oom``: the OOM event's data (agent/oom/oom.py): the request, the device's
  free memory and total at that instant, allocated/reserved, the five
  buckets, and the allocator summary at that instant (agent/allocator/segments.py);
- ``modules``: optional per-module figures ({name, parent, weights,
  gradients, optimizer_state, activations, shared, why}, bytes or None);
- ``tensors``: optional largest live tensors ({bytes, shape, dtype, module,
  site}), known where allocation sites were being recorded;
- ``others``: optional other processes on the same GPU ({pid, name, used}),
  from NVML (the monitor's side);
- ``outside_pytorch``: this process's memory outside PyTorch's cache (NVML's
  figure for it minus reserved), the monitor's side too.

The shortfall (the request minus what the device had free) is split, in this
order, into what the process wastes itself (fragmentation: free inside its
partly used segments), what other processes hold, what this process holds
outside PyTorch (CUDA context, cuBLAS/cuDNN workspaces, NCCL) and, for the
rest, real need. Each part is at most what is there, so the parts add up to
the shortfall. Without NVML's view the agent says "other processes + outside
PyTorch" as one figure: everything on the GPU that is not free and not this
process's PyTorch cache.

The fixes are agent/oom/oom_fixes.py's, the words agent/oom/oom_text.py's.
Standard library only.
"""

from __future__ import annotations

from vramscope.agent.oom.oom_fixes import fixes
from vramscope.agent.oom.oom_numbers import listed, whole


def shortfall_split(short: int, fragmentation, others, outside) -> dict:
    """The shortfall in four parts, each at most what is there, in the module's order."""
    parts, left = {}, short
    for key, there in (
        ("fragmentation", fragmentation),
        ("other_processes", others),
        ("outside_pytorch", outside),
    ):
        take = min(left, there) if there is not None else None
        parts[key] = take
        left -= take or 0
    parts["real_need"] = left
    return parts


def build_report(
    oom: dict,
    modules=None,
    tensors=None,
    others=None,
    outside_pytorch=None,
    expandable_on: bool | None = None,
) -> dict:
    """The post-mortem of one OOM event (see the module's docstring)."""
    requested, free, total = (
        whole(oom.get("requested")),
        whole(oom.get("device_free")),
        whole(oom.get("device_total")),
    )
    reserved = whole(oom.get("reserved"))
    buckets = oom.get("buckets") if isinstance(oom.get("buckets"), dict) else {}
    allocator = oom.get("allocator") if isinstance(oom.get("allocator"), dict) else None
    short = max(0, requested - free) if requested is not None and free is not None else None
    others = [p for p in listed(others) if isinstance(p, dict)]
    modules = [m for m in listed(modules) if isinstance(m, dict)]
    tensors = [t for t in listed(tensors) if isinstance(t, dict)]
    if others or outside_pytorch is not None:
        other_bytes = sum(whole(p.get("used")) or 0 for p in others) if others is not None else None
        outside = outside_pytorch
        combined = None
    else:  # the agent alone: everything on the GPU neither free nor in this process's cache
        other_bytes = outside = None
        combined = max(0, total - free - reserved) if None not in (total, free, reserved) else None
    split = None
    if short is not None:
        frag = whole((allocator or {}).get("free_split"))
        if frag is None:
            frag = whole(buckets.get("cached_free"))  # no snapshot: the whole cache, an upper bound
        split = shortfall_split(short, frag, other_bytes if combined is None else combined, outside)
        if combined is not None:
            split["other_processes_and_outside_pytorch"] = split.pop("other_processes")
    if expandable_on is None:
        expandable_on = (allocator or {}).get("expandable_recovers") is None and allocator is not None
    top_modules = sorted(
        modules,
        key=lambda m: sum(
            whole(m.get(k)) or 0 for k in ("weights", "gradients", "optimizer_state", "activations")
        ),
        reverse=True,
    )
    return {
        "device": oom.get("device"),
        "time": oom.get("time"),
        "step": oom.get("step"),
        "pid": oom.get("pid"),
        "source": oom.get("source"),
        "requested": requested,
        "device_free": free,
        "device_total": total,
        "largest_free_block": whole((allocator or {}).get("largest_free_block")),
        "allocated": whole(oom.get("allocated")),
        "reserved": reserved,
        "buckets": dict(buckets),
        "allocator": allocator,
        "shortfall": short,
        "split": split,
        "modules": top_modules[:10],
        "tensors": sorted(
            tensors,
            key=lambda t: whole(t.get("bytes")) or 0,
            reverse=True,
        )[:10],
        "others": sorted(others, key=lambda p: whole(p.get("used")) or 0, reverse=True),
        "outside_pytorch": outside_pytorch,
        "fixes": fixes(buckets, allocator, modules, others, short or 0, expandable_on),
    }
