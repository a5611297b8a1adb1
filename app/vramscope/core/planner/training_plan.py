"""Training figures: weights, gradients, master copy, optimizer state and
activations per GPU for a PlanRequest (training.py holds the arithmetic)."""

from __future__ import annotations

from fractions import Fraction

from vramscope.core.planner import inference, training
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.request import NOT_COUNTED, Figures, PlanRequest, context_warning


def _frac(x: Fraction) -> float:
    return float(x)


def div_ceil(value: int, n: int) -> int:
    return -(-value // n)


def training_figures(req: PlanRequest) -> Figures:
    shape = req.shape
    notes: list[str] = []
    precision = req.precision or "mixed"
    native = req.dtype_bytes is not None
    if native:
        layout = training.native_layout(Fraction(req.dtype_bytes), req.optimizer)
    else:
        if precision in ("bf16", "fp16"):
            notes.append(
                f"{precision} training is planned as mixed precision: {precision} "
                "working weights and gradients with an fp32 master copy for the update"
            )
        if precision in inference.QUANTIZED and not req.lora_rank:
            raise PlanError(
                "precision",
                f"{precision} weights cannot be trained directly: train "
                "LoRA adapters on the quantized frozen base (give a "
                "LoRA rank), or choose mixed precision",
            )
        layout = training.state_layout(precision, req.optimizer, req.grad_layout)
    stage = 3 if req.fsdp else req.zero_stage
    if req.fsdp and req.zero_stage not in (0, 3):
        raise PlanError("fsdp", "FSDP full shard is ZeRO stage 3; do not combine it with another stage")
    if req.gpus < 1:
        raise PlanError("gpus", "must be at least 1")

    # Which parameters are trained: all, or LoRA adapters on a frozen base.
    frozen_weight_bytes = layout.weights
    metadata = None
    if req.trainable_params is not None:
        if req.lora_rank:
            raise PlanError(
                "lora_rank",
                "the attached model already says which parameters "
                "are trained (a frozen base): a LoRA rank applies to a "
                "model given by count, config or name",
            )
        if not 0 <= req.trainable_params <= shape.params:
            raise PlanError(
                "agent",
                f"trainable parameters ({req.trainable_params:,}) must be "
                f"between 0 and the model's {shape.params:,}",
            )
        trained, trained_tensors = req.trainable_params, req.trainable_tensors
        frozen = shape.params - trained
        if req.frozen_dtype_bytes is not None:
            frozen_weight_bytes = Fraction(req.frozen_dtype_bytes)
        who = (
            f"{trained:,} of {shape.params:,} parameters trained, {frozen:,} frozen"
            if frozen
            else f"full training of {trained:,} parameters"
        )
    elif req.lora_rank:
        modules = req.lora_modules or shape.lora_default_modules
        trained, trained_tensors = shape.lora_params(req.lora_rank, tuple(modules))
        frozen = shape.params
        scheme = shape.quantization if req.precision is None else None
        scheme = scheme if scheme is not None and scheme.sized else None
        if precision in inference.QUANTIZED or scheme is not None:
            metadata = inference.weight_bytes(shape, precision, scheme)
            frozen_weight_bytes = metadata.bytes_per_param
        elif precision == "fp32":
            frozen_weight_bytes = Fraction(4)
        else:
            frozen_weight_bytes = Fraction(2)
        who = (
            f"LoRA rank {req.lora_rank} on {', '.join(modules)}: {trained:,} adapter "
            f"parameters trained, {frozen:,} frozen"
        )
    else:
        trained, trained_tensors, frozen = shape.params, shape.tensors, 0
        who = f"full training of {trained:,} parameters"
        if shape.quantization is not None and req.precision is None:
            notes.append(
                f"the checkpoint is quantized ({shape.quantization.label}): full "
                "training is planned on 16-bit weights; LoRA adapters on the quantized "
                "frozen base (QLoRA) keep it packed"
            )

    states = training.model_states(
        trained=trained,
        frozen=frozen,
        layout=layout,
        frozen_weight_bytes=frozen_weight_bytes,
        trained_tensors=trained_tensors,
        optimizer=req.optimizer,
        zero_stage=stage,
        gpus=req.gpus,
        offload=req.offload_optimizer,
        tensor_shards=req.fsdp,  # (FSDP2: a shard of every parameter on each GPU)
    )

    n = req.gpus
    shard = {
        1: "optimizer states",
        2: "optimizer states and gradients",
        3: "optimizer states, gradients and weights",
    }
    if n > 1 and stage == 0:
        notes.append(
            f"plain DDP over {n} GPUs: every GPU holds a complete copy of weights, "
            "gradients and optimizer state -- adding GPUs divides nothing "
            "(ZeRO/FSDP do)"
        )
    elif stage and n == 1:
        notes.append(f"ZeRO stage {stage} over 1 GPU shards nothing: give the number of GPUs")
    elif stage:
        name = "FSDP (full shard)" if req.fsdp else f"ZeRO stage {stage}"
        notes.append(f"{name} over {n} GPUs: each GPU holds 1/{n} of the {shard[stage]}")
        if stage == 3:
            notes.append(
                "stage 3 / FSDP gathers parameters when computation needs them, so "
                "peak memory and communication still matter"
            )

    def div(bucket_stage: int) -> str:
        return f" / {n} GPUs" if n > 1 and stage >= bucket_stage else ""

    buckets: list[tuple[str, int]] = []
    texts: list[tuple[str, str]] = []
    bpp: list[tuple[str, float]] = []
    if req.trainable_params is not None and frozen:
        w_text = (
            f"frozen: {frozen:,} × {_frac(frozen_weight_bytes):g} B + trained: "
            f"{trained:,} × {_frac(layout.weights):g} B{div(3)}. Present from first step "
            "to last; frozen weights need no gradients and no optimizer state."
        )
    elif req.lora_rank:
        w_text = (
            f"frozen base: {frozen:,} × {_frac(frozen_weight_bytes):g} B + adapters: "
            f"{trained:,} × {_frac(layout.weights):g} B{div(3)}. Present from first step "
            "to last; frozen weights need no gradients and no optimizer state."
        )
    else:
        w_dtype = (
            "the parameters' own dtype"
            if native
            else "fp32"
            if precision == "fp32"
            else ("fp16" if precision == "fp16" else "bf16")
        )
        w_text = (
            f"Ψ × {_frac(layout.weights):g} B = {trained:,} × {_frac(layout.weights):g} B "
            f"({w_dtype} working weights){div(3)}. "
            "Present from first step to last; a smaller batch frees none of it."
        )
    buckets.append(("weights", states.weights))
    texts.append(("weights", w_text))
    bpp.append(("weights", _frac(layout.weights)))
    if metadata is not None:
        buckets.append(("quantization_metadata", div_ceil(metadata.metadata, n if stage >= 3 else 1)))
        texts.append(("quantization_metadata", metadata.metadata_text))
    g_dtype = (
        "the parameters' dtype"
        if native
        else "fp32"
        if layout.gradients == 4
        else ("fp16" if precision == "fp16" else "bf16")
    )
    buckets.append(("gradients", states.gradients))
    texts.append(
        (
            "gradients",
            f"an array shaped like the trained weights, filled during "
            f"backward: {trained:,} × {_frac(layout.gradients):g} B ({g_dtype}){div(2)}"
            + ("; frozen weights have none" if (req.lora_rank or frozen) else ""),
        )
    )
    bpp.append(("gradients", _frac(layout.gradients)))
    offl = " -- offloaded to host RAM" if req.offload_optimizer else ""
    if layout.master:
        buckets.append(("master_weights", states.master))
        texts.append(
            (
                "master_weights",
                f"the fp32 master copy the optimizer updates: "
                f"{trained:,} × 4 B{div(1)} (part of the ZeRO paper's optimizer "
                f"states){offl}",
            )
        )
        bpp.append(("master_weights", _frac(layout.master)))
    buckets.append(("optimizer_state", states.optimizer))
    opt_text = training.OPTIMIZER_TEXT[req.optimizer]
    if native and req.optimizer != "adam8bit":
        moments = training.NATIVE_MOMENTS[req.optimizer]
        opt_text = (
            f"{req.optimizer}: {moments} running statistic{'s' if moments != 1 else ''} in "
            f"the parameters' dtype, {moments} × {_frac(layout.weights):g} B = "
            f"{_frac(layout.optimizer):g} B"
        )
    texts.append(
        (
            "optimizer_state",
            f"{opt_text} per trained parameter: {trained:,} × {_frac(layout.optimizer):g} B{div(1)}{offl}",
        )
    )
    bpp.append(("optimizer_state", _frac(layout.optimizer)))
    fixed = sum(b for _, b in buckets)

    host: list[tuple[str, int]] = []
    if states.host_optimizer:
        host.append(("optimizer_state", states.host_optimizer))
    if states.host_step_counters:
        notes.append(
            f"PyTorch's Adam/AdamW also keep a 4-byte step counter per parameter "
            f"tensor ({states.host_step_counters:,} B), on the CPU unless "
            "capturable/fused"
        )
    if req.offload_optimizer:
        notes.append(
            "optimizer offload (ZeRO-Offload): the bottleneck moves to PCIe bandwidth; "
            "this is the move when you must fit on one card, not a default"
        )

    if req.batch is not None or req.seq is not None:
        if req.batch is None or req.seq is None:
            raise PlanError(
                "batch" if req.batch is None else "seq",
                "activations need both the micro-batch and the sequence length",
            )
        if not shape.has_activation_shape and shape.state:
            raise PlanError(
                "batch",
                f"activations of an attention-free model "
                f"({shape.model_type}) are not modelled (the formula is a "
                "transformer's): leave out the micro-batch and sequence to "
                "plan its weights, gradients and optimizer state",
            )
        if not shape.has_activation_shape:
            raise PlanError(
                "shape",
                "activations need layers, hidden size and heads: give a "
                "config.json or a model name, or the layers, hidden size "
                "and heads with the parameter count",
            )
        act = training.activation_bytes(
            batch=req.batch,
            seq=req.seq,
            hidden=shape.hidden,
            layers=shape.layers,
            heads=shape.heads,
            checkpointing=req.checkpointing,
            flash_attention=req.flash_attention,
            fp32=(precision == "fp32"),
            active_mlp=shape.active_mlp,
        )
        buckets.append(("activations", act.bytes))
        texts.append(
            (
                "activations",
                f"intermediate results held for backward, for a "
                f"micro-batch of {req.batch} × {req.seq} tokens per GPU. {act.formula}. "
                "A GPT-style layer count; the only bucket that moves with batch and "
                "sequence length.",
            )
        )
        if req.checkpointing:
            notes.append(
                "with Hugging Face, also set model.config.use_cache = False: with "
                "use_cache=True checkpointing warns and does nothing"
            )
        if req.accumulation > 1:
            notes.append(
                f"gradient accumulation × {req.accumulation}: effective batch "
                f"{req.batch * req.accumulation * n} (micro-batch × steps × GPUs); "
                "divide the loss by the accumulation steps"
            )
    else:
        notes.append(
            "activations not planned: give the micro-batch and the sequence length (they are the only "
            "bucket that moves; the rest is fixed the moment you pick the model and "
            "the optimizer)"
        )
    if native:
        notes.append(
            "planned as the live model holds it (plain PyTorch): weights, gradients "
            "and optimizer moments in the parameters' own dtype, no fp32 master copy"
        )
    elif precision in ("mixed", "bf16", "fp16"):
        notes.append(
            "this is the ZeRO/DeepSpeed layout (16-bit model + fp32 master copy); "
            "with torch.autocast the model stays fp32 -- plan that as fp32 precision "
            "(autocast shrinks activations, not the fixed cost)"
        )
    notes.append(NOT_COUNTED)
    warning = context_warning(shape, req.seq, "the sequence")
    if req.lora_rank or frozen:
        what = "adapters" if req.lora_rank else "trained"
        layout_text = (
            f"{who}; frozen weights {_frac(frozen_weight_bytes):g} B/param; "
            f"{what} {layout.formula()} ({layout.name})"
        )
    else:
        layout_text = f"{who}: {layout.formula()} ({layout.name})"
    return Figures(
        tuple(buckets),
        tuple(texts),
        tuple(bpp),
        tuple(host),
        fixed,
        layout_text,
        tuple(notes),
        precision,
        n,
        warnings=(warning,) if warning else (),
    )
