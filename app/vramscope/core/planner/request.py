"""What the planner is asked (PlanRequest) and the figures one request gives
(Figures, before verdicts and suggestions)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from vramscope.core.planner.model_shape import ModelShape

MODES = ("train", "infer")
NOT_COUNTED = (
    "Not counted: temporary buffers (matmul workspaces, communication buffers), "
    "fragmentation and the CUDA context (the few hundred MB the runtime takes just "
    "by existing) -- keep a margin for them."
)


@dataclass(frozen=True, slots=True)
class GpuNow:
    """A GPU's memory free at this moment and who holds the most of the rest."""

    name: str  # as in PlanRequest.gpus_memory
    free: int
    holders: tuple[tuple[str, int], ...] = ()  # ("train.py (23812)", bytes), largest first


# A default context longer than this is not planned unasked: a 1M-token limit is
# what the model allows, not what a server is usually asked to hold.
DEFAULT_CONTEXT_CAP = 131_072


@dataclass(frozen=True, slots=True)
class PlanRequest:
    shape: ModelShape
    mode: str = "train"
    precision: str | None = None  # None: mixed for training; the config's quantization or bf16 for inference
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
    gpus_now: tuple[GpuNow, ...] = ()  # free memory now, by the same names (detected GPUs)
    # A frozen base, as a live model reports it: of shape.params only these are trained
    # (gradients, optimizer state); None = all of them (or the LoRA adapters with lora_rank).
    trainable_params: int | None = None
    trainable_tensors: int | None = None  # trained parameter tensors (Adam's step counters)
    # A live model's bytes per parameter in its own dtype(s) (the weighted mean when
    # mixed): training is planned as plain PyTorch -- gradients and optimizer moments in
    # that dtype, no fp32 master copy. None: the precision's layout (ZeRO paper, §3).
    dtype_bytes: Fraction | None = None  # of the trained parameters
    frozen_dtype_bytes: Fraction | None = None  # of the frozen ones (None: dtype_bytes)


@dataclass(frozen=True, slots=True)
class Figures:
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
    weight_bytes: Fraction | None = None  # inference: bytes per weight of the precision
    warnings: tuple[str, ...] = ()  # said plainly beside the verdict (context over the limit)

    @property
    def per_gpu_total(self) -> int:
        return sum(b for _, b in self.buckets)


def frac(x: Fraction) -> str:
    return f"{float(x):g}"


def context_warning(shape: ModelShape, tokens: int | None, what: str) -> str | None:
    """A plain warning when ``tokens`` exceeds the model's position limit."""
    if tokens is None or shape.max_positions is None or tokens <= shape.max_positions:
        return None
    field = shape.max_positions_field or "max_position_embeddings"
    why = (
        "learned position embeddings have no entry for those positions"
        if shape.learned_positions
        else "the model was not trained that far"
    )
    return (
        f"{what} of {tokens:,} tokens is longer than this model's limit: {field} = "
        f"{shape.max_positions:,}; beyond it {why}"
    )
