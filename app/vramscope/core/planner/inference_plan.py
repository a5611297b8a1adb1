"""Inference figures: weights (quantised as the config says, or at the chosen
precision), quantisation metadata and the KV cache for a PlanRequest."""

from __future__ import annotations

from vramscope.core.planner import inference
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.model_shape import ENCODER
from vramscope.core.planner.request import (
    DEFAULT_CONTEXT_CAP,
    NOT_COUNTED,
    Figures,
    PlanRequest,
    context_warning,
)


def inference_figures(req: PlanRequest) -> Figures:
    shape = req.shape
    notes: list[str] = []
    warnings: list[str] = []
    scheme = shape.quantization if req.precision is None else None
    if scheme is not None and not scheme.sized:
        notes.append(
            f"config.json's quantization_config is {scheme.label}: its packing is not "
            "sized, so the weights are planned at bf16 (an upper bound); choose a "
            "precision (int4, int8, fp8) to plan at that"
        )
        scheme = None
    precision = req.precision or ("bf16" if scheme is None else "quantized")
    if precision == "mixed":
        raise PlanError(
            "precision",
            "mixed precision is a training layout: for inference choose fp32, bf16, fp16, fp8, int8 or int4",
        )
    if scheme is not None:
        notes.append(f"weights as config.json's quantization_config says: {scheme.label}")
    elif req.precision and shape.quantization is not None:
        notes.append(
            f"config.json says the checkpoint is {shape.quantization.label}; planned at "
            f"{req.precision} as asked"
        )
    w = inference.weight_bytes(shape, None if scheme else precision, scheme)
    b = float(w.bytes_per_param)
    buckets = [("weights", w.weights)]
    bpp = [("weights", b)]
    texts = [
        (
            "weights",
            f"Ψ × {b:g} B = {shape.params:,} × {b:g} B ({w.label}); serving needs "
            "neither gradients nor optimizer state",
        )
    ]
    if w.metadata is not None:
        buckets.append(("quantization_metadata", w.metadata))
        texts.append(("quantization_metadata", w.metadata_text))
    if shape.active_params is not None:
        notes.append(
            f"mixture of experts: every expert is held ({shape.params:,} parameters); "
            f"{shape.active_params:,} are active per token (compute, not memory)"
        )
    fixed = sum(v for _, v in buckets)
    kv_dtype = req.kv_dtype or ("fp32" if precision == "fp32" else "fp16" if precision == "fp16" else "bf16")
    if (precision in inference.QUANTIZED or scheme) and kv_dtype != "fp8":
        notes.append(
            "reducing weight precision does not reduce cache precision: the KV cache "
            f"stays {kv_dtype} unless you choose an fp8 KV cache"
        )
    context = req.context
    if context is None and shape.max_positions is not None:
        context = min(shape.max_positions, DEFAULT_CONTEXT_CAP)
        if context < shape.max_positions:
            notes.append(
                f"context not given: planned at {context:,} tokens; the model allows "
                f"{shape.max_positions:,} -- give the context you will serve"
            )
        else:
            notes.append(
                f"context not given: the model's maximum, {context:,} tokens "
                "(a smaller context caps it; there is no reason to permit lengths you "
                "never serve)"
            )
    warning = context_warning(shape, context, "a context")
    if warning:
        warnings.append(warning)
    per_token = per_conv = None
    if shape.has_kv_shape:
        per_token = inference.kv_bytes_per_token(shape, kv_dtype)
    state = inference.state_bytes(shape, kv_dtype)
    if state:
        buckets.append(("recurrent_state", state * req.concurrency))
        texts.append(("recurrent_state", inference.state_text(shape, kv_dtype, req.concurrency)))
    if per_token == 0:  # attention-free: the state is all a sequence holds
        per_token = None
        per_conv = state or None
        notes.append(
            "no attention layer: no KV cache; each sequence holds only its recurrent "
            "state, whatever its length"
        )
    elif context is not None and per_token is not None:
        kv = inference.kv_cache_bytes(shape, kv_dtype, context, req.concurrency)
        per_conv = inference.kv_conversation_bytes(shape, kv_dtype, context) + state
        buckets.append(("kv_cache", kv))
        texts.append(("kv_cache", inference.kv_text(shape, kv_dtype, context, req.concurrency)))
        if shape.kv_decompressed:
            full = shape.kv_decompressed * context * req.concurrency * inference.KV_BYTES[kv_dtype]
            notes.append(
                f"MLA cache as serving engines keep it (latent); decompressed per layer "
                f"K and V it would be {full:,} B"
            )
    elif per_token is None and shape.kind == ENCODER:
        notes.append(
            "an encoder keeps no KV cache: weights only (plus activations per "
            "batch, not planned for inference)"
        )
    elif per_token is None and not state:
        if req.context is not None:
            inference.kv_bytes_per_token(shape, kv_dtype)  # raises the clear message
        notes.append(
            "KV cache not planned: it needs layers, KV heads and head dim (a "
            "config.json or model name, or those figures with the parameter count)"
        )
    elif per_token is not None:
        notes.append("KV cache not planned: give the context (tokens per conversation)")
    ignored = [
        name
        for name, on in (
            ("GPUs in the job", req.gpus > 1),
            ("ZeRO stage", req.zero_stage),
            ("FSDP", req.fsdp),
            ("LoRA rank", req.lora_rank),
            ("batch/sequence", req.batch or req.seq),
        )
        if on
    ]
    if ignored:
        notes.append(
            f"{', '.join(ignored)}: training options, not used for inference; the "
            "plan is one GPU holding the whole model (tensor/pipeline parallelism "
            "not modelled)"
        )
    notes.append(
        "serving also needs working buffers; the headroom is only an arithmetic "
        "allowance -- measure a representative long request, then several "
        "concurrent ones, before setting limits"
    )
    notes.append(NOT_COUNTED)
    layout = f"inference at {w.label}: {b:g} B/param" + (
        f", KV cache {kv_dtype}" if per_token is not None else ""
    )
    return Figures(
        tuple(buckets),
        tuple(texts),
        tuple(bpp),
        (),
        fixed,
        layout,
        tuple(notes),
        precision,
        1,
        kv_dtype,
        context,
        per_token,
        per_conv,
        weight_bytes=w.bytes_per_param,
        warnings=tuple(warnings),
    )
