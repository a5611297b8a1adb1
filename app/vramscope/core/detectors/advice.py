"""What to do about a process that fills or grows on the card, fitted to it: its
PyTorch buckets when the agent reports them, its own options (a batch size on
its command line, the option that sizes a server's pool), and what it is (a
training script, a server of any kind, a notebook).

The order is the usual least-damage order ("Surviving GPU OOM"; PyTorch's CUDA
notes, pytorch.org/docs/stable/notes/cuda.html, for the caching allocator and
expandable segments; Dettmers et al. 2022 for 8-bit optimizers; Hu et al. 2021
for LoRA; Rajbhandari et al. 2020 for ZeRO): the remedy follows the bucket
that dominates, and only a bucket that is large gets its remedy -- an 8-bit
optimizer or LoRA where optimizer state (or gradients with it) is a large share,
never where the weights alone fill the card.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from vramscope.core.samples import ProcessInfo
from vramscope.core.units import fmt_bytes

# batch-size options of common training entry points (argparse scripts, HF Trainer,
# Lightning, torchtune, DeepSpeed), first found wins
BATCH_OPTIONS = (
    "--batch-size",
    "--batch_size",
    "--per_device_train_batch_size",
    "--micro-batch-size",
    "--micro_batch_size",
    "--train_batch_size",
    "--bs",
)
# options and names that make a process a long-running server, whatever its engine
_SERVER_OPTIONS = ("--port", "--host", "--bind")
_SERVER_WORDS = ("serve", "server", "service", "api", "uvicorn", "gunicorn", "hypercorn")
OPTIMIZER_LARGE_SHARE = 0.25  # optimizer state at least this share of the fixed cost
CACHE_LEADS_SHARE = 0.25  # cached-but-free at least this share of reserved leads the advice


def batch_option(cmdline: Sequence[str] | None) -> tuple[str, str] | None:
    """(option as spelled there, value) of the batch size the command line sets, or None."""
    wanted = {o.replace("_", "-"): i for i, o in enumerate(BATCH_OPTIONS)}
    args = list(cmdline or ())
    found = []
    for i, arg in enumerate(args):
        if not isinstance(arg, str) or not arg.startswith("-"):
            continue
        name, eq, value = arg.partition("=")
        rank = wanted.get(name.replace("_", "-"))
        if rank is None:
            continue
        if eq:
            found.append((rank, name, value))
        elif i + 1 < len(args):
            found.append((rank, name, args[i + 1]))
    return min(found)[1:] if found else None


def serves_requests(info: ProcessInfo | None) -> bool:
    """A long-running server of any kind: a --port/--host option, or a script,
    module or executable whose name says it serves (embed_server, uvicorn app:api)."""
    if info is None or not info.cmdline:
        return False
    args = list(info.cmdline)
    if any(a in _SERVER_OPTIONS or a.split("=", 1)[0] in _SERVER_OPTIONS for a in args[1:]):
        return True
    names = [os.path.basename(args[0])]
    for i, a in enumerate(args[1:], 1):
        if not a.startswith("-") and (args[i - 1] == "-m" or a.endswith(".py")):
            names.append(os.path.basename(a))
            break
    return any(w in n.lower() for n in names for w in _SERVER_WORDS)


def batch_text(cmdline: Sequence[str] | None) -> str:
    """ "It runs with --batch-size 32: try 16 with gradient accumulation 2." or ""."""
    found = batch_option(cmdline)
    if found is None:
        return ""
    opt, value = found
    try:
        n = int(value)
    except ValueError:
        return f"It runs with {opt} {value}: a smaller one with gradient accumulation frees activations."
    if n <= 1:
        return f"It runs with {opt} {n} already: activation checkpointing is what is left."
    return (
        f"It runs with {opt} {n}: try {opt} {n // 2} with gradient accumulation 2 "
        "(the same effective batch; divide the loss by 2)."
    )


def growing_server_fix(info: ProcessInfo | None) -> str:
    """The action first (the alerts list shows a fix's first sentence), then why."""
    what = f"`{info.command}`" if info is not None and info.command else "It"
    return (
        "Cap what the server caches and serve under torch.inference_mode() (or no_grad); "
        "restarting it gives the memory back now. "
        f"{what} is a long-running server: memory that grows request after request is "
        "usually a cache without a bound (embeddings, results, compiled shapes) or tensors "
        "kept per request; padding or bucketing inputs to a few sizes lets the allocator "
        "reuse its blocks."
    )


def cache_leads(buckets: dict | None) -> str:
    """The lead advice when the process's own cache (reserved but free) fills the card."""
    if not buckets:
        return ""
    cache = buckets.get("cached_free") or 0
    reserved = sum(
        buckets.get(n) or 0
        for n in ("weights", "gradients", "optimizer_state", "other_allocated", "cached_free")
    )
    if not reserved or cache < CACHE_LEADS_SHARE * reserved:
        return ""
    return (
        f"{fmt_bytes(cache)} of it is its own cache -- reserved by PyTorch's caching "
        "allocator but free: no other process can use it. First, "
        "torch.cuda.empty_cache() at a quiet point (after evaluation, between phases) hands "
        "it back, and PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True keeps it from "
        "building up; the tensors themselves need less than the card shows."
    )


def fixed_cost_text(weights: int, gradients: int, optimizer: int) -> str:
    fixed = weights + gradients + optimizer
    if optimizer >= OPTIMIZER_LARGE_SHARE * fixed:
        return (
            f"The fixed cost dominates (weights + gradients + optimizer state = "
            f"{fmt_bytes(fixed)}, optimizer state {fmt_bytes(optimizer)}; a smaller batch "
            "frees none of it): try an 8-bit optimizer first, then ZeRO/FSDP sharding, "
            "then LoRA. Plain DDP saves no memory."
        )
    return (
        f"The fixed cost dominates, mostly weights ({fmt_bytes(weights)} of "
        f"{fmt_bytes(fixed)}; optimizer state only {fmt_bytes(optimizer)}, so an 8-bit "
        "optimizer or LoRA saves little): load the weights in bf16/fp16 or quantised "
        "(8-bit/4-bit), or shard them (FSDP) across GPUs."
    )
