"""What would make a plan fit, ranked by what each costs the user.

Training (cumulative, stopping once it fits): a smaller micro-batch with
gradient accumulation (same result, more steps), activation checkpointing
(one more forward), SDPA / flash attention, LoRA, QLoRA (a 4-bit base under
the adapters), an 8-bit optimizer, ZeRO/FSDP across the GPUs present (never
GPUs that are not there), then optimizer offload (PCIe time every step).
While the fixed cost alone (weights, gradients, optimizer state) is over the
GPU, the activation changes cannot help and are skipped; a change that saves
nothing is not offered. Inference (each on its own): cap concurrency or
context, an fp8 KV cache, quantised weights.
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
        "forward pass (about 3 units of work become 4)"
    )


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
        f"{effective} per GPU kept; divide the loss by {acc})"
    )


def _step_flash(req, capacity):
    if not _has_activations(req) or req.flash_attention or not req.shape.heads:
        return None
    return replace(req, flash_attention=True), (
        'SDPA / flash attention (attn_implementation="sdpa" or "flash_attention_2"): the '
        "attention scores are never stored whole, no s² term"
    )


def _step_8bit(req, capacity):
    if req.optimizer not in ("adam", "adamw"):
        return None
    return replace(req, optimizer="adam8bit"), (
        "8-bit Adam (bitsandbytes AdamW8bit): the moments take 2 bytes per parameter instead "
        "of 8 -- a one-line change, try it first"
    )


def _gpus_present(req) -> int:
    """The GPUs the job may shard over: those it already runs on, or those given/detected."""
    return max(req.gpus, len(req.gpus_memory))


def _step_zero(req, capacity):
    stage = 3 if req.fsdp else req.zero_stage
    present = _gpus_present(req)
    if stage >= 3 or present < 2:
        return None
    counts = [n for n in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if n < present] + [present]
    options = [replace(req, zero_stage=s, gpus=n, fsdp=False) for n in counts for s in range(stage + 1, 4)]
    # The fewest GPUs (then the lowest stage) that make the whole plan fit; if
    # activations alone are too big for that, the fewest that make the fixed cost fit.
    chosen = next((c for c in options if _figures(c).per_gpu_total <= capacity), None)
    if chosen is None:
        chosen = next((c for c in options if _figures(c).fixed <= capacity), None)
    if chosen is None:
        return None
    s, n = chosen.zero_stage, chosen.gpus
    what = {
        1: "the optimizer states",
        2: "the optimizer states and gradients",
        3: "the optimizer states, gradients and weights",
    }[s]
    fsdp = " (or FSDP)" if s == 3 else ""
    more = "" if n == req.gpus else f" -- runs the job on {n} of the {present} GPUs here"
    return chosen, f"ZeRO stage {s}{fsdp} over {n} GPUs: each holds 1/{n} of {what}{more}"


def _step_lora(req, capacity):
    if req.lora_rank or not req.shape.layer_linears or req.trainable_params is not None:
        return None
    modules = req.shape.lora_default_modules
    return replace(req, lora_rank=8, lora_modules=modules), (
        f"LoRA rank 8 on {', '.join(modules)} (PEFT's defaults): frozen weights need no "
        "gradients and no optimizer state; activations do not shrink"
    )


def _step_qlora(req, capacity):
    if not req.lora_rank or req.precision in ("int4", "int8") or req.trainable_params is not None:
        return None
    return replace(req, precision="int4"), (
        "QLoRA: the frozen base in 4-bit NF4 (bitsandbytes) under the LoRA adapters -- a "
        "quarter of the 16-bit weights; check quality on your task"
    )


def _step_offload(req, capacity):
    if req.offload_optimizer:
        return None
    return replace(req, offload_optimizer=True), (
        "offload the optimizer state to CPU RAM (ZeRO-Offload): fits on fewer cards, pays in "
        "PCIe time every step -- not a default"
    )


# (step, changes activations only): in the order of what they cost the user
_TRAINING_STEPS = (
    (_step_micro_batch, True),
    (_step_checkpointing, True),
    (_step_flash, True),
    (_step_lora, False),
    (_step_qlora, False),
    (_step_8bit, False),
    (_step_zero, False),
    (_step_offload, False),
)


def training_suggestions(req, fig, capacity) -> tuple[Suggestion, ...]:
    """Cumulative, cheapest for the user first; stops once the plan fits the GPU."""
    steps = list(_TRAINING_STEPS)
    out: list[Suggestion] = []
    current, cur_fig = req, fig
    while cur_fig.per_gpu_total > capacity and steps:
        # while the fixed cost alone is over, activation changes cannot make it fit
        step = next((s for s in steps if not (s[1] and cur_fig.fixed > capacity)), None)
        if step is None:
            break
        steps.remove(step)
        result = step[0](current, capacity)
        if result is None:
            continue
        candidate, text = result
        suggestion, new_fig = _suggestion(text, candidate, capacity)
        if new_fig.per_gpu_total >= cur_fig.per_gpu_total:
            continue  # saves nothing here
        current, cur_fig = candidate, new_fig
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
            out.append(
                _suggestion(
                    f"serve at most {fit} concurrent conversations of {fig.context:,} tokens "
                    f"(vLLM --max-num-seqs {fit}); request {fit + 1} waits",
                    replace(req, concurrency=fit, context=fig.context),
                    capacity,
                )[0]
            )
        elif fit == 0:
            longest = inference.longest_context_that_fits(req.shape, fig.kv_dtype, headroom)
            if longest > 0:
                out.append(
                    _suggestion(
                        f"cap the context at {longest:,} tokens, one conversation "
                        f"(vLLM --max-model-len {longest})",
                        replace(req, context=longest, concurrency=1),
                        capacity,
                    )[0]
                )
    if kv and fig.kv_dtype != "fp8":
        out.append(
            _suggestion(
                "fp8 KV cache (vLLM --kv-cache-dtype fp8): b from 2 bytes to 1, halving the cache"
                if fig.kv_dtype in ("bf16", "fp16")
                else "fp8 KV cache (vLLM --kv-cache-dtype fp8): 1 byte per element",
                replace(req, kv_dtype="fp8", context=fig.context),
                capacity,
            )[0]
        )
    for q in ("int8", "int4"):
        if inference.WEIGHT_BYTES[q] < (fig.weight_bytes or inference.WEIGHT_BYTES["bf16"]):
            out.append(
                _suggestion(
                    f"quantize the weights to {q.upper()} (check answer quality on the actual task; "
                    "the KV cache keeps its dtype)",
                    replace(req, precision=q, context=fig.context, kv_dtype=fig.kv_dtype),
                    capacity,
                )[0]
            )
    return tuple(out)
