"""Inference memory: weights by precision, quantisation metadata, KV cache.

Weights = Ψ × bytes per parameter (fp32 4, fp16/bf16 2, fp8/int8 1, int4
0.5): the idealised storage. Quantised formats also store scales (zeros,
indices) and keep embeddings, the output head, norms and biases at 16 bits;
that is a separate, stated bucket (``quantization_metadata``), never hidden
in the weights figure. quantization.py says what each format stores.

KV cache = Σ over layers of the elements each caches per token × b bytes ×
the tokens it keeps (kv_layout.py: full, sliding window, MLA latent, shared),
for T tokens per conversation × concurrent conversations. For uniform full
attention this is the familiar 2 · L · H_kv · d_head · b · T.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from vramscope.core.planner import kv_layout
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.model_shape import ModelShape
from vramscope.core.planner.quantization import QuantScheme, scheme_for_precision, skips
from vramscope.core.planner.sizes import ceil_bytes

WEIGHT_BYTES = {
    "fp32": Fraction(4),
    "bf16": Fraction(2),
    "fp16": Fraction(2),
    "fp8": Fraction(1),
    "int8": Fraction(1),
    "int4": Fraction(1, 2),
}
INFER_PRECISIONS = tuple(WEIGHT_BYTES)
QUANTIZED = ("fp8", "int8", "int4")
KV_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
KV_DTYPES = tuple(KV_BYTES)

# A count has no layout: a stated allowance of one fp32 scale per 64 weights
# (bitsandbytes' block-wise 4-bit default, generous for 8-bit's per-row scales).
QUANT_BLOCK = 64
QUANT_SCALE_BYTES = 4
HIGH_PRECISION_BYTES = Fraction(2)  # tensors left unquantised stay 16-bit


@dataclass(frozen=True, slots=True)
class Weights:
    weights: int  # Ψ × bytes per parameter
    metadata: int | None  # None when unquantised
    metadata_text: str | None
    bytes_per_param: Fraction = Fraction(2)
    label: str = ""


def bytes_of(scheme: QuantScheme) -> Fraction:
    return Fraction(scheme.bits, 8)


def weight_bytes(
    shape: ModelShape, precision: str | None = None, scheme: QuantScheme | None = None
) -> Weights:
    """Weights of the model at ``precision`` (or in a quantisation ``scheme``)."""
    if scheme is None:
        if precision not in WEIGHT_BYTES:
            raise PlanError(
                "precision",
                f"unknown weight precision {precision!r}: choose from {', '.join(INFER_PRECISIONS)}",
            )
        scheme = scheme_for_precision(precision)
        if scheme is None:
            b = WEIGHT_BYTES[precision]
            return Weights(ceil_bytes(shape.params * b), None, None, b, precision)
    b = bytes_of(scheme)
    n = shape.params
    weights = ceil_bytes(n * b)
    quantized = shape.quantizable_params
    if quantized is None or not shape.layer_linears:
        scales = ceil_bytes(Fraction(n, QUANT_BLOCK)) * QUANT_SCALE_BYTES
        text = (
            f"allowance: one {QUANT_SCALE_BYTES}-byte scale per {QUANT_BLOCK} weights "
            "(bitsandbytes block-wise default) = "
            f"{float(Fraction(QUANT_SCALE_BYTES, QUANT_BLOCK))} "
            "B/param; which tensors stay at higher precision is not known from a count"
        )
        return Weights(weights, scales, text, b, scheme.label)
    packed = meta = skipped = 0
    for lin in shape.layer_linears:
        if skips(scheme.skip, lin.name, lin.short):
            skipped += lin.count * lin.in_features * lin.out_features
            continue
        p, m = scheme.matrix_bytes(lin.in_features, lin.out_features)
        packed += lin.count * p
        meta += lin.count * m
    kept = n - quantized + skipped
    extra = ceil_bytes(kept * HIGH_PRECISION_BYTES) + packed - weights
    text = (
        f"{scheme.label}: scales, zeros and indices of the packed matrices = {meta:,} B, plus "
        f"the {kept:,} parameters left at 16-bit (embeddings, output head, norms, biases"
        f"{', skipped modules' if skipped else ''}) = {extra:,} B more than Ψ × {float(b):g} B"
    )
    return Weights(weights, meta + extra, text, b, scheme.label)


def kv_bytes_per_token(shape: ModelShape, kv_dtype: str) -> int:
    """Bytes per token while every layer caches it (all layers, before windows fill)."""
    if kv_dtype not in KV_BYTES:
        raise PlanError(
            "kv_dtype", f"unknown KV cache dtype {kv_dtype!r}: choose from {', '.join(KV_DTYPES)}"
        )
    elements = shape.kv_bytes_per_token_element
    if elements is None:
        raise PlanError(
            "shape",
            "the KV cache needs layers, KV heads and head dim: give a "
            "config.json or a model name, or the layers, KV heads and head "
            "dim (or hidden size and heads) with the parameter count",
        )
    return elements * KV_BYTES[kv_dtype]


def kv_conversation_bytes(shape: ModelShape, kv_dtype: str, context: int) -> int:
    """KV bytes of one conversation of ``context`` tokens, layer type by layer type."""
    if not isinstance(context, int) or context <= 0:
        raise PlanError("context", "must be a positive number of tokens")
    kv_bytes_per_token(shape, kv_dtype)  # validates dtype and shape
    return shape.kv_elements(context) * KV_BYTES[kv_dtype]


def kv_cache_bytes(shape: ModelShape, kv_dtype: str, context: int, concurrency: int = 1) -> int:
    if not isinstance(concurrency, int) or concurrency <= 0:
        raise PlanError("concurrency", "must be at least 1")
    return kv_conversation_bytes(shape, kv_dtype, context) * concurrency


def kv_text(shape: ModelShape, kv_dtype: str, context: int, concurrency: int) -> str:
    b = KV_BYTES[kv_dtype]
    layers = shape.kv_layers
    per_conv = kv_conversation_bytes(shape, kv_dtype, context)
    tail = (
        f" = {per_conv:,} B per conversation of {context:,} tokens × {concurrency} "
        f"concurrent = {context * concurrency:,} tokens alive"
    )
    if len(layers) == 1 and layers[0].kind == kv_layout.FULL:
        return (
            f"2·L·H_kv·d_head·b·T = 2 × {shape.layers} × {shape.kv_heads} × "
            f"{shape.head_dim} × {b} B ({kv_dtype}) = {kv_bytes_per_token(shape, kv_dtype):,}"
            f" B per token" + tail
        )
    parts = []
    for k in layers:
        if not k.elements:
            parts.append(f"{k.count} layers {k.kind}: 0 B")
            continue
        kept = k.tokens(context)
        parts.append(
            f"{k.count} layers {k.kind}: {k.elements:,} elements × {b} B ({kv_dtype}) × "
            f"{kept:,} tokens" + (f" (window {k.window:,})" if k.window else "")
        )
    return "; ".join(parts) + tail


def state_bytes(shape: ModelShape, kv_dtype: str) -> int:
    """Recurrent + convolution state of one sequence (state-space layers), in the cache dtype."""
    return shape.state_elements * KV_BYTES[kv_dtype]


def state_text(shape: ModelShape, kv_dtype: str, concurrency: int) -> str:
    from vramscope.core.planner.ssm_state import describe

    per = state_bytes(shape, kv_dtype)
    return (
        f"{describe(shape.state)} = {shape.state_elements:,} elements × "
        f"{KV_BYTES[kv_dtype]} B ({kv_dtype}) = {per:,} B per sequence, whatever its length, "
        f"× {concurrency} concurrent (vLLM may keep the SSM state in fp32: "
        "mamba_ssm_cache_dtype)"
    )


def conversations_that_fit(headroom: int, per_conversation: int) -> int:
    """Whole conversations of one size that fit in the headroom (0 if none)."""
    if per_conversation <= 0:
        raise ValueError("a conversation must need some memory")
    return max(0, headroom) // per_conversation


def longest_context_that_fits(shape: ModelShape, kv_dtype: str, headroom: int) -> int:
    """The longest single conversation whose cache fits in ``headroom`` (0 if none)."""
    if headroom <= 0 or kv_bytes_per_token(shape, kv_dtype) <= 0:
        return 0
    lo, hi = 0, 1
    while kv_conversation_bytes(shape, kv_dtype, hi) <= headroom:
        lo, hi = hi, hi * 2
        if hi > 1 << 40:  # every layer windowed: any length fits
            return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if kv_conversation_bytes(shape, kv_dtype, mid) <= headroom:
            lo = mid
        else:
            hi = mid
    return lo
