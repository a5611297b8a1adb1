"""The fit planner: a request in, a frozen Plan out (buckets, verdicts,
suggestions in the seeds' order of least damage, a text per bucket).

    plan = build_plan(PlanRequest(shape=shape_from_params(7_000_000_000),
                                  mode="train", gpus_memory=(("A100", 80 * GiB),)))
    plan.bucket_dict()  -> {"weights": ..., "gradients": ..., ...}

Buckets are what ONE GPU holds (fit is judged per GPU). ``per_gpu_total`` is
their sum; ``total`` is the job over all its GPUs (= per_gpu_total for one
GPU; ×N for N replicas or shards). ``host_buckets`` live in host RAM
(offloaded optimizer state, PyTorch's Adam step counters).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from vramscope.core.planner import inference, training
from vramscope.core.planner.model_shape import ModelShape

MODES = ("train", "infer")
NOT_COUNTED = ("Not counted: temporary buffers (matmul workspaces, communication buffers), "
               "fragmentation and the CUDA context (the few hundred MB the runtime takes just "
               "by existing) -- keep a margin for them.")


@dataclass(frozen=True, slots=True)
class PlanRequest:
    shape: ModelShape
    mode: str = "train"
    precision: str | None = None  # None: mixed for training, bf16 for inference
    optimizer: str = "adam"
    grad_layout: int = 16  # 16: bf16 gradients (ZeRO accounting); 18: fp32 gradients (HF layout)
    zero_stage: int = 0
    gpus: int = 1  # GPUs the job runs on (ZeRO/FSDP shard over them; DDP replicates)
    fsdp: bool = False  # = ZeRO stage 3 (full shard)
    offload_optimizer: bool = False
    lora_rank: int | None = None
    lora_modules: tuple[str, ...] = ()  # () = the model's PEFT defaults
    batch: int | None = None  # micro-batch per GPU
    seq: int | None = None
    accumulation: int = 1  # gradient accumulation steps (effective batch = batch × this × gpus)
    checkpointing: bool = False
    flash_attention: bool = False
    kv_dtype: str | None = None  # None: the weights' 16-bit dtype (bf16 for int8/int4)
    context: int | None = None  # None: the config's max positions
    concurrency: int = 1
    gpus_memory: tuple[tuple[str, int], ...] = ()  # (name, capacity bytes) to judge against
    # A frozen base, as a live model reports it: of shape.params only these are trained
    # (gradients, optimizer state); None = all of them (or the LoRA adapters with lora_rank).
    trainable_params: int | None = None
    trainable_tensors: int | None = None  # trained parameter tensors (Adam's step counters)
    # A live model's bytes per parameter in its own dtype(s) (the weighted mean when
    # mixed): training is planned as plain PyTorch -- gradients and optimizer moments in
    # that dtype, no fp32 master copy. None: the precision's layout (seeds / ZeRO).
    dtype_bytes: Fraction | None = None  # of the trained parameters
    frozen_dtype_bytes: Fraction | None = None  # of the frozen ones (None: dtype_bytes)


@dataclass(frozen=True, slots=True)
class GpuVerdict:
    name: str
    total: int  # capacity in bytes
    fits: bool
    margin: int  # capacity - per-GPU total; negative = short by that much
    conversations: int | None = None  # inference: conversations of `context` tokens in the headroom


@dataclass(frozen=True, slots=True)
class Suggestion:
    change: str
    total: int
    per_gpu_total: int
    fits: bool | None  # against the smallest GPU; None when no GPU is known


@dataclass(frozen=True, slots=True)
class Plan:
    mode: str
    request: PlanRequest
    buckets: tuple[tuple[str, int], ...]
    explanations: tuple[tuple[str, str], ...]
    bytes_per_param: tuple[tuple[str, float], ...]
    host_buckets: tuple[tuple[str, int], ...]
    per_gpu_total: int
    total: int
    fixed_per_gpu: int  # what does not move with batch/context: model states or weights
    layout: str
    gpus: tuple[GpuVerdict, ...] = ()
    suggestions: tuple[Suggestion, ...] = ()
    suggestions_cumulative: bool = True
    suggestions_target: str | None = None  # the GPU they aim at: the smallest one given
    notes: tuple[str, ...] = ()
    precision: str = ""
    kv_dtype: str | None = None
    context: int | None = None
    kv_bytes_per_token: int | None = None
    kv_bytes_per_conversation: int | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def bucket_dict(self) -> dict[str, int]:
        return dict(self.buckets)

    def explanation(self, name: str) -> str:
        return dict(self.explanations).get(name, "")

    def to_json(self) -> dict:
        shape = self.request.shape
        return {
            "mode": self.mode,
            "buckets": self.bucket_dict(),
            "total": self.total,
            "per_gpu_total": self.per_gpu_total,
            "gpus": [
                {"name": g.name, "total": g.total, "fits": g.fits, "margin": g.margin,
                 **({"conversations": g.conversations} if g.conversations is not None else {})}
                for g in self.gpus],
            "suggestions": [
                {"change": s.change, "total": s.total, "per_gpu_total": s.per_gpu_total,
                 "fits": s.fits} for s in self.suggestions],
            "suggestions_cumulative": self.suggestions_cumulative,
            "suggestions_target": self.suggestions_target,
            "bytes_per_param": dict(self.bytes_per_param),
            "host_buckets": dict(self.host_buckets),
            "explanations": dict(self.explanations),
            "layout": self.layout,
            "precision": self.precision,
            "gpus_in_job": self.request.gpus if self.mode == "train" else 1,
            "kv_dtype": self.kv_dtype,
            "context": self.context,
            "concurrency": self.request.concurrency if self.mode == "infer" else None,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_bytes_per_conversation": self.kv_bytes_per_conversation,
            "model": {
                "params": shape.params, "tensors": shape.tensors, "layers": shape.layers,
                "hidden": shape.hidden, "heads": shape.heads, "kv_heads": shape.kv_heads,
                "head_dim": shape.head_dim, "intermediate": shape.intermediate,
                "vocab": shape.vocab, "tied_embeddings": shape.tied_embeddings,
                "model_type": shape.model_type, "source": shape.source,
                "fields_used": list(shape.fields_used), "notes": list(shape.notes),
            },
            "notes": list(self.notes),
        }


# --- the arithmetic ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Figures:
    buckets: tuple[tuple[str, int], ...]
    explanations: tuple[tuple[str, str], ...]
    bytes_per_param: tuple[tuple[str, float], ...]
    host: tuple[tuple[str, int], ...]
    fixed: int
    layout: str
    notes: tuple[str, ...]
    precision: str
    job_gpus: int
    kv_dtype: str | None = None
    context: int | None = None
    kv_per_token: int | None = None
    kv_per_conversation: int | None = None

    @property
    def per_gpu_total(self) -> int:
        return sum(b for _, b in self.buckets)


def _frac(x: Fraction) -> float:
    return float(x)


def _figures(req: PlanRequest) -> _Figures:
    if req.mode not in MODES:
        raise ValueError(f"--mode is train or infer, not {req.mode!r}")
    if req.mode == "train":
        return _training_figures(req)
    return _inference_figures(req)


def _training_figures(req: PlanRequest) -> _Figures:
    shape = req.shape
    notes: list[str] = []
    precision = req.precision or "mixed"
    native = req.dtype_bytes is not None
    if native:
        layout = training.native_layout(Fraction(req.dtype_bytes), req.optimizer)
    else:
        if precision in ("bf16", "fp16"):
            notes.append(f"{precision} training is planned as mixed precision: {precision} "
                         "working weights and gradients with an fp32 master copy for the update")
        if precision in ("int8", "int4") and not req.lora_rank:
            raise ValueError(f"{precision} weights cannot be trained directly: add --lora-rank R "
                             "to train adapters on a quantized frozen base, or use --precision "
                             "mixed")
        layout = training.state_layout(precision, req.optimizer, req.grad_layout)
    stage = 3 if req.fsdp else req.zero_stage
    if req.fsdp and req.zero_stage not in (0, 3):
        raise ValueError("--fsdp shards like ZeRO stage 3; do not combine it with another stage")
    if req.gpus < 1:
        raise ValueError("--gpus must be at least 1")

    # Which parameters are trained: all, or LoRA adapters on a frozen base.
    frozen_weight_bytes = layout.weights
    metadata = None
    if req.trainable_params is not None:
        if req.lora_rank:
            raise ValueError("the model already says which parameters are trained (a frozen "
                             "base): LoRA rank applies to a model given by count or config")
        if not 0 <= req.trainable_params <= shape.params:
            raise ValueError(f"trainable parameters ({req.trainable_params:,}) must be between 0 "
                             f"and the model's {shape.params:,}")
        trained, trained_tensors = req.trainable_params, req.trainable_tensors
        frozen = shape.params - trained
        if req.frozen_dtype_bytes is not None:
            frozen_weight_bytes = Fraction(req.frozen_dtype_bytes)
        who = (f"{trained:,} of {shape.params:,} parameters trained, {frozen:,} frozen"
               if frozen else f"full training of {trained:,} parameters")
    elif req.lora_rank:
        modules = req.lora_modules or shape.lora_default_modules
        trained, trained_tensors = shape.lora_params(req.lora_rank, tuple(modules))
        frozen = shape.params
        if precision in ("int8", "int4"):
            frozen_weight_bytes = inference.WEIGHT_BYTES[precision]
            metadata = inference.weight_bytes(shape, precision)
        elif precision == "fp32":
            frozen_weight_bytes = Fraction(4)
        else:
            frozen_weight_bytes = Fraction(2)
        who = (f"LoRA rank {req.lora_rank} on {', '.join(modules)}: {trained:,} adapter "
               f"parameters trained, {frozen:,} frozen")
    else:
        trained, trained_tensors, frozen = shape.params, shape.tensors, 0
        who = f"full training of {trained:,} parameters"

    states = training.model_states(
        trained=trained, frozen=frozen, layout=layout, frozen_weight_bytes=frozen_weight_bytes,
        trained_tensors=trained_tensors, optimizer=req.optimizer, zero_stage=stage,
        gpus=req.gpus, offload=req.offload_optimizer)

    n = req.gpus
    shard = {1: "optimizer states", 2: "optimizer states and gradients",
             3: "optimizer states, gradients and weights"}
    if n > 1 and stage == 0:
        notes.append(f"plain DDP over {n} GPUs: every GPU holds a complete copy of weights, "
                     "gradients and optimizer state -- adding GPUs divides nothing "
                     "(ZeRO/FSDP do)")
    elif stage and n == 1:
        notes.append(f"ZeRO stage {stage} over 1 GPU shards nothing: give --gpus N")
    elif stage:
        name = "FSDP (full shard)" if req.fsdp else f"ZeRO stage {stage}"
        notes.append(f"{name} over {n} GPUs: each GPU holds 1/{n} of the {shard[stage]}")
        if stage == 3:
            notes.append("stage 3 / FSDP gathers parameters when computation needs them, so "
                         "peak memory and communication still matter")

    def div(bucket_stage: int) -> str:
        return f" / {n} GPUs" if n > 1 and stage >= bucket_stage else ""

    buckets: list[tuple[str, int]] = []
    texts: list[tuple[str, str]] = []
    bpp: list[tuple[str, float]] = []
    if req.trainable_params is not None and frozen:
        w_text = (f"frozen: {frozen:,} × {_frac(frozen_weight_bytes):g} B + trained: "
                  f"{trained:,} × {_frac(layout.weights):g} B{div(3)}. Present from first step "
                  "to last; frozen weights need no gradients and no optimizer state.")
    elif req.lora_rank:
        w_text = (f"frozen base: {frozen:,} × {_frac(frozen_weight_bytes):g} B + adapters: "
                  f"{trained:,} × {_frac(layout.weights):g} B{div(3)}. Present from first step "
                  "to last; frozen weights need no gradients and no optimizer state.")
    else:
        w_dtype = ("the parameters' own dtype" if native else "fp32" if precision == "fp32"
                   else ("fp16" if precision == "fp16" else "bf16"))
        w_text = (f"Ψ × {_frac(layout.weights):g} B = {trained:,} × {_frac(layout.weights):g} B "
                  f"({w_dtype} working weights){div(3)}. "
                  "Present from first step to last; a smaller batch frees none of it.")
    buckets.append(("weights", states.weights))
    texts.append(("weights", w_text))
    bpp.append(("weights", _frac(layout.weights)))
    if metadata is not None:
        buckets.append(("quantization_metadata",
                        _div_ceil(metadata.metadata, n if stage >= 3 else 1)))
        texts.append(("quantization_metadata", metadata.metadata_text))
    g_dtype = ("the parameters' dtype" if native else "fp32" if layout.gradients == 4
               else ("fp16" if precision == "fp16" else "bf16"))
    buckets.append(("gradients", states.gradients))
    texts.append(("gradients", f"an array shaped like the trained weights, filled during "
                  f"backward: {trained:,} × {_frac(layout.gradients):g} B ({g_dtype}){div(2)}"
                  + ("; frozen weights have none" if (req.lora_rank or frozen) else "")))
    bpp.append(("gradients", _frac(layout.gradients)))
    offl = " -- offloaded to host RAM" if req.offload_optimizer else ""
    if layout.master:
        buckets.append(("master_weights", states.master))
        texts.append(("master_weights", f"the fp32 master copy the optimizer updates: "
                      f"{trained:,} × 4 B{div(1)} (part of the ZeRO paper's optimizer "
                      f"states){offl}"))
        bpp.append(("master_weights", _frac(layout.master)))
    buckets.append(("optimizer_state", states.optimizer))
    opt_text = training.OPTIMIZER_TEXT[req.optimizer]
    if native and req.optimizer != "adam8bit":
        moments = training.NATIVE_MOMENTS[req.optimizer]
        opt_text = (f"{req.optimizer}: {moments} running statistic{'s' if moments != 1 else ''} in "
                    f"the parameters' dtype, {moments} × {_frac(layout.weights):g} B = "
                    f"{_frac(layout.optimizer):g} B")
    texts.append(("optimizer_state", f"{opt_text} per trained "
                  f"parameter: {trained:,} × {_frac(layout.optimizer):g} B{div(1)}{offl}"))
    bpp.append(("optimizer_state", _frac(layout.optimizer)))
    fixed = sum(b for _, b in buckets)

    host: list[tuple[str, int]] = []
    if states.host_optimizer:
        host.append(("optimizer_state", states.host_optimizer))
    if states.host_step_counters:
        notes.append(f"PyTorch's Adam/AdamW also keep a 4-byte step counter per parameter "
                     f"tensor ({states.host_step_counters:,} B), on the CPU unless "
                     "capturable/fused")
    if req.offload_optimizer:
        notes.append("optimizer offload (ZeRO-Offload): the bottleneck moves to PCIe bandwidth; "
                     "this is the move when you must fit on one card, not a default")

    if req.batch is not None or req.seq is not None:
        if req.batch is None or req.seq is None:
            raise ValueError("activations need both --batch and --seq")
        if not shape.has_activation_shape:
            raise ValueError("activations need layers, hidden size and heads: give --config "
                             "config.json, or --layers, --hidden and --heads")
        act = training.activation_bytes(
            batch=req.batch, seq=req.seq, hidden=shape.hidden, layers=shape.layers,
            heads=shape.heads, checkpointing=req.checkpointing,
            flash_attention=req.flash_attention, fp32=(precision == "fp32"))
        buckets.append(("activations", act.bytes))
        texts.append(("activations", f"intermediate results held for backward, for a "
                      f"micro-batch of {req.batch} × {req.seq} tokens per GPU. {act.formula}. "
                      "A GPT-style layer count; the only bucket that moves with batch and "
                      "sequence length."))
        if req.checkpointing:
            notes.append("with Hugging Face, also set model.config.use_cache = False: with "
                         "use_cache=True checkpointing warns and does nothing")
        if req.accumulation > 1:
            notes.append(f"gradient accumulation × {req.accumulation}: effective batch "
                         f"{req.batch * req.accumulation * n} (micro-batch × steps × GPUs); "
                         "divide the loss by the accumulation steps")
    else:
        notes.append("activations not planned: give --batch and --seq (they are the only "
                     "bucket that moves; the rest is fixed the moment you pick the model and "
                     "the optimizer)")
    if native:
        notes.append("planned as the live model holds it (plain PyTorch): weights, gradients "
                     "and optimizer moments in the parameters' own dtype, no fp32 master copy")
    elif precision in ("mixed", "bf16", "fp16"):
        notes.append("this is the ZeRO/DeepSpeed layout (16-bit model + fp32 master copy); "
                     "with torch.autocast the model stays fp32 -- plan that as --precision fp32 "
                     "(autocast shrinks activations, not the fixed cost)")
    notes.append(NOT_COUNTED)
    if req.lora_rank or frozen:
        what = "adapters" if req.lora_rank else "trained"
        layout_text = (f"{who}; frozen weights {_frac(frozen_weight_bytes):g} B/param; "
                       f"{what} {layout.formula()} ({layout.name})")
    else:
        layout_text = f"{who}: {layout.formula()} ({layout.name})"
    return _Figures(tuple(buckets), tuple(texts), tuple(bpp), tuple(host), fixed, layout_text,
                    tuple(notes), precision, n)


def _div_ceil(value: int, n: int) -> int:
    return -(-value // n)


def _inference_figures(req: PlanRequest) -> _Figures:
    shape = req.shape
    notes: list[str] = []
    precision = req.precision or "bf16"
    if precision == "mixed":
        raise ValueError("mixed precision is a training layout: for inference choose "
                         "fp32, bf16, fp16, int8 or int4")
    w = inference.weight_bytes(shape, precision)
    buckets = [("weights", w.weights)]
    bpp = [("weights", float(inference.WEIGHT_BYTES[precision]))]
    texts = [("weights", f"Ψ × {float(inference.WEIGHT_BYTES[precision]):g} B = {shape.params:,}"
              f" × {float(inference.WEIGHT_BYTES[precision]):g} B ({precision}); serving needs "
              "neither gradients nor optimizer state")]
    if w.metadata is not None:
        buckets.append(("quantization_metadata", w.metadata))
        texts.append(("quantization_metadata", w.metadata_text))
    fixed = sum(b for _, b in buckets)
    kv_dtype = req.kv_dtype or ("fp32" if precision == "fp32" else
                                "fp16" if precision == "fp16" else "bf16")
    if precision in ("int8", "int4") and kv_dtype != "fp8":
        notes.append("reducing weight precision does not reduce cache precision: the KV cache "
                     f"stays {kv_dtype} unless you choose --kv-dtype fp8")
    context = req.context
    if context is None and shape.max_positions is not None:
        context = shape.max_positions
        notes.append(f"context not given: the model's maximum, {context:,} tokens "
                     "(--context caps it; there is no reason to permit lengths you never serve)")
    per_token = per_conv = None
    if shape.has_kv_shape:
        per_token = inference.kv_bytes_per_token(shape, kv_dtype)
    if context is not None and per_token is not None:
        kv = inference.kv_cache_bytes(shape, kv_dtype, context, req.concurrency)
        per_conv = per_token * context
        buckets.append(("kv_cache", kv))
        b = inference.KV_BYTES[kv_dtype]
        texts.append(("kv_cache", f"2·L·H_kv·d_head·b·T = 2 × {shape.layers} × "
                      f"{shape.kv_heads} "
                      f"× {shape.head_dim} × {b} B ({kv_dtype}) = {per_token:,} B per token, × "
                      f"T = {context:,} tokens × {req.concurrency} concurrent = "
                      f"{context * req.concurrency:,} tokens alive"))
    elif per_token is None:
        if req.context is not None:
            inference.kv_bytes_per_token(shape, kv_dtype)  # raises the clear message
        notes.append("KV cache not planned: it needs layers, KV heads and head dim "
                     "(--config, or --layers --kv-heads --head-dim)")
    else:
        notes.append("KV cache not planned: give --context (tokens per conversation)")
    ignored = [flag for flag, on in (("--gpus", req.gpus > 1), ("--zero-stage", req.zero_stage),
                                     ("--fsdp", req.fsdp), ("--lora-rank", req.lora_rank),
                                     ("--batch/--seq", req.batch or req.seq)) if on]
    if ignored:
        notes.append(f"{', '.join(ignored)}: training options, not used for inference; the "
                     "plan is one GPU holding the whole model (tensor/pipeline parallelism "
                     "not modelled)")
    notes.append("serving also needs working buffers; the headroom is only an arithmetic "
                  "allowance -- measure a representative long request, then several "
                  "concurrent ones, before setting limits")
    notes.append(NOT_COUNTED)
    layout = (f"inference at {precision}: {float(inference.WEIGHT_BYTES[precision]):g} B/param"
              + (f", KV cache {kv_dtype}" if per_token is not None else ""))
    return _Figures(tuple(buckets), tuple(texts), tuple(bpp), (), fixed, layout, tuple(notes),
                    precision, 1, kv_dtype, context, per_token, per_conv)


# --- verdicts and suggestions --------------------------------------------------------


def _verdicts(req: PlanRequest, fig: _Figures) -> tuple[GpuVerdict, ...]:
    out = []
    per_gpu = fig.per_gpu_total
    for name, capacity in req.gpus_memory:
        conv = None
        if fig.kv_per_conversation:
            conv = inference.conversations_that_fit(capacity - fig.fixed, fig.kv_per_conversation)
        out.append(GpuVerdict(name, capacity, per_gpu <= capacity, capacity - per_gpu, conv))
    return tuple(out)


def build_plan(req: PlanRequest) -> Plan:
    """The plan for ``req``; ValueError (with the reason) when it cannot be made."""
    fig = _figures(req)
    suggestions: tuple[Suggestion, ...] = ()
    notes = list(fig.notes)
    target = None
    if req.gpus_memory:
        target, capacity = min(req.gpus_memory, key=lambda g: g[1])
        if fig.per_gpu_total > capacity:
            suggestions = (_training_suggestions(req, fig, capacity) if req.mode == "train"
                           else _inference_suggestions(req, fig, capacity))
            short = not suggestions or not suggestions[-1].fits
            if (short and req.mode == "train" and not req.lora_rank
                    and not req.shape.layer_linears):
                notes.append("LoRA would remove the gradients and optimizer state of the frozen "
                             "weights; give --config to size the adapters")
            if not any(s.fits for s in suggestions):  # none (alone or together) fits
                notes.append("none of the changes above makes it fit the smallest GPU: a larger "
                             "GPU, more GPUs (ZeRO-3/FSDP, tensor or pipeline parallelism) or a "
                             "smaller model")
    return Plan(
        mode=req.mode, request=req, buckets=fig.buckets, explanations=fig.explanations,
        bytes_per_param=fig.bytes_per_param, host_buckets=fig.host,
        per_gpu_total=fig.per_gpu_total, total=fig.per_gpu_total * fig.job_gpus,
        fixed_per_gpu=fig.fixed, layout=fig.layout, gpus=_verdicts(req, fig),
        suggestions=suggestions, suggestions_cumulative=(req.mode == "train"),
        suggestions_target=target if suggestions else None,
        notes=tuple(notes), precision=fig.precision, kv_dtype=fig.kv_dtype, context=fig.context,
        kv_bytes_per_token=fig.kv_per_token, kv_bytes_per_conversation=fig.kv_per_conversation)


def _suggestion(text: str, req: PlanRequest, capacity: int) -> tuple[Suggestion, _Figures]:
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


def _training_suggestions(req, fig, capacity) -> tuple[Suggestion, ...]:
    """Cumulative, in the seeds' order: activations the problem -> checkpointing, then
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


def _inference_suggestions(req, fig, capacity) -> tuple[Suggestion, ...]:
    """Each on its own, in the seeds' order: cap concurrency/context, fp8 KV cache,
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
            longest = inference.longest_context_that_fits(headroom, fig.kv_per_token)
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
        if inference.WEIGHT_BYTES[q] < inference.WEIGHT_BYTES[fig.precision]:
            out.append(_suggestion(
                f"quantize the weights to {q.upper()} (check answer quality on the actual task; "
                "the KV cache keeps its dtype)",
                replace(req, precision=q, context=fig.context,
                        kv_dtype=fig.kv_dtype), capacity)[0])
    return tuple(out)
