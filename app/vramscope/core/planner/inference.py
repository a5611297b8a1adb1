"""Inference memory: weights by precision, quantization metadata, KV cache.

Weights = Ψ × bytes per parameter (fp32 4, fp16/bf16 2, int8 1, int4 0.5):
the seeds' idealized storage, decimal GB. Quantized formats also need
metadata (scales) and keep some tensors at higher precision; that is a
separate, stated allowance (``quantization_metadata``), never hidden in the
weights figure.

KV cache = 2 · L · H_kv · d_head · b · T: K and V for every layer and KV
head, b bytes per element, T tokens alive on the server (context length ×
concurrent conversations).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from vramscope.core.planner.model_shape import ModelShape
from vramscope.core.planner.sizes import ceil_bytes

WEIGHT_BYTES = {"fp32": Fraction(4), "bf16": Fraction(2), "fp16": Fraction(2),
                "int8": Fraction(1), "int4": Fraction(1, 2)}
INFER_PRECISIONS = tuple(WEIGHT_BYTES)
KV_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
KV_DTYPES = tuple(KV_BYTES)

# Stated allowance for quantization metadata: one fp32 scale (absmax) per
# block of 64 weights -- bitsandbytes' block-wise 4-bit default, and generous
# for 8-bit's per-row scales: 4/64 = 0.0625 B per quantized parameter.
QUANT_BLOCK = 64
QUANT_SCALE_BYTES = 4
HIGH_PRECISION_BYTES = Fraction(2)  # tensors left unquantized stay 16-bit


@dataclass(frozen=True, slots=True)
class Weights:
    weights: int  # Ψ × bytes per parameter
    metadata: int | None  # None when unquantized
    metadata_text: str | None


def weight_bytes(shape: ModelShape, precision: str, params: int | None = None) -> Weights:
    """Weights of ``params`` parameters (default: the whole model) at ``precision``."""
    if precision not in WEIGHT_BYTES:
        raise ValueError(f"unknown weight precision {precision!r}: "
                         f"choose from {', '.join(INFER_PRECISIONS)}")
    n = shape.params if params is None else params
    b = WEIGHT_BYTES[precision]
    weights = ceil_bytes(n * b)
    if precision not in ("int8", "int4"):
        return Weights(weights, None, None)
    quantized = shape.quantizable_params if params is None else None
    if quantized is None:
        scales = ceil_bytes(Fraction(n, QUANT_BLOCK)) * QUANT_SCALE_BYTES
        text = (f"allowance: one {QUANT_SCALE_BYTES}-byte scale per {QUANT_BLOCK} weights "
                "(bitsandbytes block-wise default) = "
                f"{float(Fraction(QUANT_SCALE_BYTES, QUANT_BLOCK))} "
                "B/param; which tensors stay at higher precision is not known from a count")
        return Weights(weights, scales, text)
    kept = n - quantized
    scales = ceil_bytes(Fraction(quantized, QUANT_BLOCK)) * QUANT_SCALE_BYTES
    extra = ceil_bytes(kept * (HIGH_PRECISION_BYTES - b))
    text = (f"allowance: one {QUANT_SCALE_BYTES}-byte scale per {QUANT_BLOCK} quantized weights "
            f"(bitsandbytes block-wise default) = {scales:,} B, plus the {kept:,} parameters "
            f"left at 16-bit (embeddings, output head, norms, biases) = {extra:,} B more "
            f"than the {precision} figure")
    return Weights(weights, scales + extra, text)


def kv_bytes_per_token(shape: ModelShape, kv_dtype: str) -> int:
    """2 · L · H_kv · d_head · b for one token."""
    if kv_dtype not in KV_BYTES:
        raise ValueError(f"unknown KV cache dtype {kv_dtype!r}: choose from {', '.join(KV_DTYPES)}")
    elements = shape.kv_bytes_per_token_element
    if elements is None:
        raise ValueError("the KV cache needs layers, KV heads and head dim: give --config "
                         "config.json, or --layers, --kv-heads and --head-dim "
                         "(or --hidden and --heads)")
    return elements * KV_BYTES[kv_dtype]


def kv_cache_bytes(shape: ModelShape, kv_dtype: str, context: int, concurrency: int = 1) -> int:
    """2 · L · H_kv · d_head · b · T with T = context × concurrency."""
    if not isinstance(context, int) or context <= 0:
        raise ValueError("--context must be a positive number of tokens")
    if not isinstance(concurrency, int) or concurrency <= 0:
        raise ValueError("--concurrency must be at least 1")
    return kv_bytes_per_token(shape, kv_dtype) * context * concurrency


def conversations_that_fit(headroom: int, per_conversation: int) -> int:
    """Whole conversations of one size that fit in the headroom (0 if none)."""
    if per_conversation <= 0:
        raise ValueError("a conversation must need some memory")
    return max(0, headroom) // per_conversation


def longest_context_that_fits(headroom: int, per_token: int) -> int:
    return max(0, headroom) // per_token if per_token > 0 else 0
