"""The fit planner: a request in, a frozen Plan out (buckets, verdicts,
suggestions in order of least damage, a text per bucket).

    plan = build_plan(PlanRequest(shape=shape_from_params(7_000_000_000),
                                  mode="train", gpus_memory=(("A100", 80 * GiB),)))
    plan.bucket_dict()  -> {"weights": ..., "gradients": ..., ...}

Buckets are what ONE GPU holds (fit is judged per GPU). ``per_gpu_total`` is
their sum; ``total`` is the job over all its GPUs (= per_gpu_total for one
GPU; ×N for N replicas or shards). ``host_buckets`` live in host RAM
(offloaded optimizer state, PyTorch's Adam step counters).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vramscope.core.planner import inference
from vramscope.core.planner.figures import figures
from vramscope.core.planner.request import MODES, NOT_COUNTED, Figures, PlanRequest
from vramscope.core.planner.suggestions import Suggestion, inference_suggestions, training_suggestions

__all__ = ["MODES", "NOT_COUNTED", "GpuVerdict", "Plan", "PlanRequest", "Suggestion", "build_plan"]


@dataclass(frozen=True, slots=True)
class GpuVerdict:
    name: str
    total: int  # capacity in bytes
    fits: bool
    margin: int  # capacity - per-GPU total; negative = short by that much
    conversations: int | None = None  # inference: conversations of `context` tokens in the headroom
    free: int | None = None  # memory free on it now (None: not known, e.g. --gpu-memory)
    holders: tuple[tuple[str, int], ...] = ()  # who holds the most of the rest now

    @property
    def fits_now(self) -> bool | None:
        """Fits in what is free at this moment (None: free memory unknown)."""
        return None if self.free is None else self.margin_now >= 0

    @property
    def margin_now(self) -> int | None:
        return None if self.free is None else self.free - (self.total - self.margin)


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
    warnings: tuple[str, ...] = ()  # said plainly beside the verdict (context over the limit)
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
                {
                    "name": g.name,
                    "total": g.total,
                    "fits": g.fits,
                    "margin": g.margin,
                    "free_now": g.free,
                    "fits_now": g.fits_now,
                    "margin_now": g.margin_now,
                    "holders_now": [{"process": who, "bytes": n} for who, n in g.holders],
                    **({"conversations": g.conversations} if g.conversations is not None else {}),
                }
                for g in self.gpus
            ],
            "suggestions": [
                {"change": s.change, "total": s.total, "per_gpu_total": s.per_gpu_total, "fits": s.fits}
                for s in self.suggestions
            ],
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
                "params": shape.params,
                "tensors": shape.tensors,
                "layers": shape.layers,
                "hidden": shape.hidden,
                "heads": shape.heads,
                "kv_heads": shape.kv_heads,
                "head_dim": shape.head_dim,
                "intermediate": shape.intermediate,
                "vocab": shape.vocab,
                "tied_embeddings": shape.tied_embeddings,
                "model_type": shape.model_type,
                "source": shape.source,
                "counted_by": shape.counted_by,
                "max_positions": shape.max_positions,
                "max_positions_field": shape.max_positions_field,
                "active_params": shape.active_params,
                "experts": list(shape.experts) if shape.experts else None,
                "quantization": shape.quantization.label if shape.quantization else None,
                "kv_layers": [
                    {"kind": k.kind, "layers": k.count, "elements_per_token": k.elements, "window": k.window}
                    for k in shape.kv_layers
                ],
                "kv_decompressed_elements_per_token": shape.kv_decompressed,
                "kind": shape.kind,
                "architecture": shape.architecture,
                "parts": dict(shape.parts),
                "state_elements_per_sequence": shape.state_elements or None,
                "checkpoint": dict(shape.checkpoint) or None,
                "fields_used": list(shape.fields_used),
                "notes": list(shape.notes),
            },
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }


# --- verdicts and suggestions --------------------------------------------------------


def _verdicts(req: PlanRequest, fig: Figures) -> tuple[GpuVerdict, ...]:
    out = []
    per_gpu = fig.per_gpu_total
    now = {g.name: g for g in req.gpus_now}
    for name, capacity in req.gpus_memory:
        conv = None
        if fig.kv_per_conversation:
            conv = inference.conversations_that_fit(capacity - fig.fixed, fig.kv_per_conversation)
        free = now[name].free if name in now else None
        holders = now[name].holders if name in now else ()
        out.append(GpuVerdict(name, capacity, per_gpu <= capacity, capacity - per_gpu, conv, free, holders))
    return tuple(out)


def build_plan(req: PlanRequest) -> Plan:
    """The plan for ``req``; PlanError (field, reason) when it cannot be made."""
    fig = figures(req)
    suggestions: tuple[Suggestion, ...] = ()
    notes = list(fig.notes)
    target = None
    if req.gpus_memory:
        target, capacity = min(req.gpus_memory, key=lambda g: g[1])
        if fig.per_gpu_total > capacity:
            suggestions = (
                training_suggestions(req, fig, capacity)
                if req.mode == "train"
                else inference_suggestions(req, fig, capacity)
            )
            short = not suggestions or not suggestions[-1].fits
            if short and req.mode == "train" and not req.lora_rank and not req.shape.layer_linears:
                notes.append(
                    "LoRA would remove the gradients and optimizer state of the frozen "
                    "weights; give a config.json or model name to size the adapters"
                )
            if not any(s.fits for s in suggestions):  # none (alone or together) fits
                notes.append(
                    "none of the changes above makes it fit the smallest GPU: a larger "
                    "GPU, more GPUs (ZeRO-3/FSDP, tensor or pipeline parallelism) or a "
                    "smaller model"
                )
    return Plan(
        mode=req.mode,
        request=req,
        buckets=fig.buckets,
        explanations=fig.explanations,
        bytes_per_param=fig.bytes_per_param,
        host_buckets=fig.host,
        per_gpu_total=fig.per_gpu_total,
        total=fig.per_gpu_total * fig.job_gpus,
        fixed_per_gpu=fig.fixed,
        layout=fig.layout,
        gpus=_verdicts(req, fig),
        suggestions=suggestions,
        suggestions_cumulative=(req.mode == "train"),
        suggestions_target=target if suggestions else None,
        notes=tuple(notes),
        precision=fig.precision,
        kv_dtype=fig.kv_dtype,
        context=fig.context,
        kv_bytes_per_token=fig.kv_per_token,
        kv_bytes_per_conversation=fig.kv_per_conversation,
        warnings=fig.warnings,
    )
