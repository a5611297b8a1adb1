"""What would make a plan fit, least damaging first.

Training (cumulative): activations the problem -> checkpointing, then a
smaller micro-batch with accumulation; the fixed cost the problem -> 8-bit
Adam, ZeRO, LoRA, then optimizer offload. Inference (each on its own): cap
concurrency or context, an fp8 KV cache, quantised weights.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vramscope.core.planner import inference
from vramscope.core.planner.figures import figures as _figures
from vramscope.core.planner.request import Figures, PlanRequest


@dataclass(frozen=True, slots=True)
class Suggestion:
    change: str
    total: int
    per_gpu_total: int
    fits: bool | None  # against the smallest GPU; None when no GPU is known


def _suggestion(text: str, req: PlanRequest, capacity: int) -> tuple[Suggestion, Figures]:
    fig = _figures(req)
    total = fig.per_gpu_total
    return Suggestion(text, total * fig.job_gpus, total, total <= capacity), fig


def _has_activations(req: PlanRequest) -> bool:
    return req.batch is not None and req.seq is not None


def _step_checkpointing(req, capacity):
    if not _has_activations(req) or req.checkpointing:
        return None
    return replace(req, checkpointing=True), (
        "gradient checkpointing (√n segments): recompute instead of remember, one extra "
        "forward pass (about 3 units of work become 4)")


def _step_micro_batch(req, capacity):
    if not _has_activations(req) or req.batch <= 1:
        return None
    b = req.batch
    effective = b * req.accumulation
    divisors = [d for d in range(b - 1, 0, -1) if b % d == 0]
    chosen = divisors[-1]
    for d in divisors:  # the largest micro-batch that fits
        if _figures(replace(req, batch=d, accumulation=effective // d)).per_gpu_total <= capacity:
            chosen = d
            break
    acc = effective // chosen
    return replace(req, batch=chosen, accumulation=acc), (
        f"micro-batch {chosen} with gradient accumulation × {acc} (effective batch "
        f"{effective} per GPU kept; divide the loss by {acc})")


def _step_8bit(req, capacity):
    if req.optimizer not in ("adam", "adamw"):
        return None
    return replace(req, optimizer="adam8bit"), (
        "8-bit Adam (bitsandbytes AdamW8bit): the moments take 2 bytes per parameter instead "
        "of 8 -- a one-line change, try it first")


def _step_zero(req, capacity):
    stage = 3 if req.fsdp else req.zero_stage
    if stage >= 3:
        return None
    counts = [req.gpus] if req.gpus > 1 else []
    counts += [n for n in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if n > req.gpus]
    options = [replace(req, zero_stage=s, gpus=n, fsdp=False)
               for n in counts for s in range(stage + 1, 4)]
    # The fewest GPUs (then the lowest stage) that make the whole plan fit; if
    # activations alone are too big for that, the fewest that make the fixed cost fit.
    chosen = next((c for c in options if _figures(c).per_gpu_total <= capacity), None)
    if chosen is None:
        chosen = next((c for c in options if _figures(c).fixed <= capacity), None)
    if chosen is None:
        return None
    s, n = chosen.zero_stage, chosen.gpus
    what = {1: "the optimizer states", 2: "the optimizer states and gradients",
            3: "the optimizer states, gradients and weights"}[s]
    fsdp = " (or FSDP)" if s == 3 else ""
    more = "" if n == req.gpus else f" -- needs {n} GPUs of this size"
    return chosen, f"ZeRO stage {s}{fsdp} over {n} GPUs: each holds 1/{n} of {what}{more}"


def _step_lora(req, capacity):
    if req.lora_rank or not req.shape.layer_linears:
        return None
    modules = req.shape.lora_default_modules
    return replace(req, lora_rank=8, lora_modules=modules), (
        f"LoRA rank 8 on {', '.join(modules)} (PEFT's defaults): frozen weights need no "
        "gradients and no optimizer state; activations do not shrink")


def _step_offload(req, capacity):
    if req.offload_optimizer:
        return None
    return replace(req, offload_optimizer=True), (
        "offload the optimizer state to CPU RAM (ZeRO-Offload): fits on fewer cards, pays in "
        "PCIe time every step -- not a default")


def training_suggestions(req, fig, capacity) -> tuple[Suggestion, ...]:
    """Cumulative: activations the problem -> checkpointing, then
    smaller micro-batch + accumulation; fixed cost the problem -> 8-bit optimizer, ZeRO,
    LoRA, then offload. Stops once the plan fits the smallest GPU."""
    activations = [_step_checkpointing, _step_micro_batch]
    fixed_cost = [_step_8bit, _step_zero, _step_lora, _step_offload]
    out: list[Suggestion] = []
    current, cur_fig = req, fig
    while cur_fig.per_gpu_total > capacity and (activations or fixed_cost):
        family = (fixed_cost if (cur_fig.fixed > capacity and fixed_cost) or not activations
                  else activations)
        step = family.pop(0)
        result = step(current, capacity)
        if result is None:
            continue
        current, text = result
        suggestion, cur_fig = _suggestion(text, current, capacity)
        out.append(suggestion)
    return tuple(out)


def inference_suggestions(req, fig, capacity) -> tuple[Suggestion, ...]:
    """Each on its own: cap concurrency/context, fp8 KV cache,
    quantize the weights (check answer quality on the actual task)."""
    out: list[Suggestion] = []
    kv = fig.kv_per_conversation
    if kv and fig.fixed < capacity:
        headroom = capacity - fig.fixed
        fit = inference.conversations_that_fit(headroom, kv)
        if req.concurrency > 1 and fit >= 1:
            out.append(_suggestion(
                f"serve at most {fit} concurrent conversations of {fig.context:,} tokens "
                f"(vLLM --max-num-seqs {fit}); request {fit + 1} waits",
                replace(req, concurrency=fit, context=fig.context), capacity)[0])
        elif fit == 0:
            longest = inference.longest_context_that_fits(req.shape, fig.kv_dtype, headroom)
            if longest > 0:
                out.append(_suggestion(
                    f"cap the context at {longest:,} tokens, one conversation "
                    f"(vLLM --max-model-len {longest})",
                    replace(req, context=longest, concurrency=1), capacity)[0])
    if kv and fig.kv_dtype != "fp8":
        out.append(_suggestion(
            "fp8 KV cache (vLLM --kv-cache-dtype fp8): b from 2 bytes to 1, halving the cache"
            if fig.kv_dtype in ("bf16", "fp16") else
            "fp8 KV cache (vLLM --kv-cache-dtype fp8): 1 byte per element",
            replace(req, kv_dtype="fp8", context=fig.context), capacity)[0])
    for q in ("int8", "int4"):
        if inference.WEIGHT_BYTES[q] < (fig.weight_bytes or inference.WEIGHT_BYTES["bf16"]):
            out.append(_suggestion(
                f"quantize the weights to {q.upper()} (check answer quality on the actual task; "
                "the KV cache keeps its dtype)",
                replace(req, precision=q, context=fig.context,
                        kv_dtype=fig.kv_dtype), capacity)[0])
    return tuple(out)
