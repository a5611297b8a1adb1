"""The KV cache of a model, layer by layer, from its config.

Each layer caches per token either K and V of its KV heads
(2 · H_kv · d_head elements: multi-head, grouped-query and multi-query
attention alike), or -- with multi-head latent attention (DeepSeek-V2/V3,
arXiv:2405.04434 §2.1) -- one compressed latent of ``kv_lora_rank``
elements plus the decoupled RoPE key of ``qk_rope_head_dim``, which is what
serving engines store (vLLM's and SGLang's MLA backends); the decompressed
K/V size is noted beside it.

A sliding-window layer (Mistral-7B-v0.1, Phi-3; every other layer of
Gemma-2; five of six layers of Gemma-3) keeps at most ``window`` tokens, so
at long contexts it costs less than a full-attention layer: transformers'
hybrid cache and vLLM's hybrid allocator size them that way. Layers that
reuse an earlier layer's cache (``num_kv_shared_layers``) add nothing, and
linear-attention / state-space layers keep a constant state, not a cache
(ssm_state.py sizes it per sequence).

An encoder-decoder's decoder (BART, T5) caches its own self-attention K/V
per generated token and, per layer, the cross-attention K/V of the encoder's
output: one entry per *source* token (transformers' EncoderDecoderCache).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FULL = "full attention"
SLIDING = "sliding window"
MLA = "MLA latent"
SHARED = "shared with an earlier layer"
STATE = "constant state (no KV cache)"
CROSS = "cross-attention (per source token)"

_SLIDING_TYPES = ("sliding_attention", "chunked_attention", "local_attention")
_STATE_TYPES = ("linear_attention", "mamba", "mamba2", "recurrent", "conv")
_NO_CACHE_TYPES = ("mlp", "moe")  # NemotronH's MLP-only layers: neither cache nor state


@dataclass(frozen=True, slots=True)
class KvLayer:
    kind: str
    elements: int  # cached elements per token in this layer (K and V together)
    window: int | None = None  # sliding layers: the most tokens kept
    count: int = 1  # identical layers

    def tokens(self, context: int, source: int | None = None) -> int:
        if self.kind == CROSS:
            return context if source is None else source
        return context if self.window is None else min(context, self.window)


def elements(layers: tuple[KvLayer, ...], context: int, source: int | None = None) -> int:
    """Cached elements for one conversation of ``context`` tokens (an encoder-decoder's
    cross-attention: ``source`` tokens, the context when not given)."""
    return sum(k.count * k.elements * k.tokens(context, source) for k in layers)


def elements_per_token(layers: tuple[KvLayer, ...]) -> int:
    """Elements per token while every layer still caches it (context <= every window)."""
    return sum(k.count * k.elements for k in layers)


def describe(layers: tuple[KvLayer, ...]) -> str:
    parts = []
    for k in layers:
        window = f", window {k.window:,}" if k.window is not None else ""
        parts.append(f"{k.count} × {k.kind} ({k.elements:,} elements/token{window})")
    return " + ".join(parts)


def _merge(per_layer: list[KvLayer]) -> tuple[KvLayer, ...]:
    out: dict[tuple, int] = {}
    for k in per_layer:
        key = (k.kind, k.elements, k.window)
        out[key] = out.get(key, 0) + 1
    return tuple(KvLayer(kind, e, w, n) for (kind, e, w), n in out.items())


def _layer_types(cfg: Mapping, model_type: str, layers: int) -> list[str]:
    types = cfg.get("layer_types")
    if isinstance(types, (list, tuple)) and len(types) == layers and all(isinstance(t, str) for t in types):
        return list(types)
    window = cfg.get("sliding_window")
    if model_type == "gemma2":  # Gemma2Config: even layers (0, 2, ...) slide
        return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(layers)]
    if model_type in ("gemma3", "gemma3_text"):  # every sliding_window_pattern-th is global
        pattern = cfg.get("sliding_window_pattern") or 6
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if not window or cfg.get("use_sliding_window") is False:
        return ["full_attention"] * layers
    if "max_window_layers" in cfg and cfg.get("use_sliding_window"):  # Qwen2 family
        first = cfg.get("max_window_layers") or 0
        return ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
    return ["sliding_attention"] * layers


def kv_layers(
    cfg: Mapping, *, model_type: str, layers: int, heads: int, kv_heads: int, head_dim: int
) -> tuple[tuple[KvLayer, ...], int | None, list[str]]:
    """(KV layers, decompressed elements per token or None, notes) of a config."""
    notes: list[str] = []
    rank, rope = cfg.get("kv_lora_rank"), cfg.get("qk_rope_head_dim")
    if isinstance(rank, int) and isinstance(rope, int) and rank > 0:
        nope = cfg.get("qk_nope_head_dim") or 0
        v_dim = cfg.get("v_head_dim") or nope
        decompressed = layers * heads * (nope + rope + v_dim)
        latent = rank + rope
        notes.append(
            f"MLA: each layer caches one latent of kv_lora_rank {rank} + "
            f"qk_rope_head_dim {rope} = {latent} elements per token, as serving "
            f"engines store it; decompressed K and V would be {heads} heads × "
            f"({nope} + {rope} + {v_dim}) = {heads * (nope + rope + v_dim):,} "
            f"({heads * (nope + rope + v_dim) / latent:.1f}×)"
        )
        return (KvLayer(MLA, latent, None, layers),), decompressed, notes
    per_kv = 2 * kv_heads * head_dim
    types = _layer_types(cfg, model_type, layers)
    window = cfg.get("sliding_window")
    windows = window if isinstance(window, (list, tuple)) else [window] * layers
    chunk = cfg.get("attention_chunk_size")
    shared = cfg.get("num_kv_shared_layers") or 0
    per_layer = []
    for i, kind in enumerate(types):
        if shared and i >= layers - shared:
            per_layer.append(KvLayer(SHARED, 0))
        elif kind in _STATE_TYPES or kind in _NO_CACHE_TYPES:
            per_layer.append(KvLayer(STATE, 0))
        elif kind in _SLIDING_TYPES:
            w = chunk if kind == "chunked_attention" and chunk else windows[i]
            if isinstance(w, int) and not isinstance(w, bool) and w > 0:
                per_layer.append(KvLayer(SLIDING, per_kv, w))
            else:
                per_layer.append(KvLayer(FULL, per_kv))
        else:
            per_layer.append(KvLayer(FULL, per_kv))
    out = _merge(per_layer)
    if any(k.kind == SLIDING for k in out):
        notes.append(
            "sliding-window layers keep at most their window of tokens (transformers' "
            "hybrid cache, vLLM's hybrid allocator); engines that allocate every layer "
            "for the full context need more"
        )
    if shared:
        notes.append(
            f"the last {shared} layers reuse earlier layers' KV cache "
            "(num_kv_shared_layers): no cache of their own"
        )
    return out, None, notes


def cross_attention(layers: int, heads: int, head_dim: int) -> KvLayer:
    """An encoder-decoder's cross-attention cache: K and V of every source token, per
    decoder layer."""
    return KvLayer(CROSS, 2 * heads * head_dim, None, layers)
