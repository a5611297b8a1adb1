"""The recurrent state of state-space and linear-attention layers, per sequence.

A Mamba, Mamba-2 or gated-DeltaNet layer keeps no per-token KV cache: each
sequence holds a convolution state (the last ``d_conv`` inputs of the causal
1-D convolution) and a recurrent state, both the same size at any context
length. Sizes as transformers' caches hold them:

- Mamba (Gu & Dao 2023, arXiv:2312.00752; Jamba's Mamba layers): conv
  ``d_inner × d_conv``, SSM ``d_inner × d_state`` with ``d_inner = expand ×
  hidden``.
- Mamba-2 (Dao & Gu 2024, arXiv:2405.21060; Bamba, Falcon-H1, Nemotron-H):
  conv ``(d_inner + 2 · n_groups · d_state) × d_conv`` (x, B and C pass the
  convolution), SSM ``n_heads × head_dim × d_state``.
- Gated DeltaNet (Yang et al. 2024, arXiv:2412.06464; Qwen3-Next's linear
  attention): conv ``(2 · H_k · d_k + H_v · d_v) × d_conv``, recurrent
  ``H_v × d_k × d_v``.

SSM heads (``num_heads`` of Mamba-2, ``mamba_n_heads``) are not attention
heads: they never enter the KV cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MAMBA = "Mamba"
MAMBA2 = "Mamba-2"
DELTANET = "gated DeltaNet"

STATE_TYPES = ("linear_attention", "mamba", "mamba2", "hybrid")


@dataclass(frozen=True, slots=True)
class StateLayer:
    kind: str  # MAMBA, MAMBA2 or DELTANET
    conv: int  # convolution-state elements per sequence, one layer
    recurrent: int  # SSM / recurrent-state elements per sequence, one layer
    count: int  # layers of this kind

    @property
    def elements(self) -> int:
        return self.count * (self.conv + self.recurrent)


def first_int(cfg: Mapping, *keys: str) -> int | None:
    """The first of ``keys`` that holds a positive integer in ``cfg``."""
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def _num(cfg: Mapping, *keys: str) -> float | None:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return v
    return None


def _state_layer(cfg: Mapping, model_type: str, count: int) -> StateLayer | None:
    hidden = first_int(cfg, "hidden_size", "d_model")
    conv = first_int(cfg, "linear_conv_kernel_dim", "mamba_d_conv", "conv_kernel", "d_conv")
    if conv is None:
        return None
    v_heads = first_int(cfg, "linear_num_value_heads")
    if v_heads:  # gated DeltaNet (Qwen3-Next)
        k_heads = first_int(cfg, "linear_num_key_heads")
        dk, dv = first_int(cfg, "linear_key_head_dim"), first_int(cfg, "linear_value_head_dim")
        if None in (k_heads, dk, dv):
            return None
        return StateLayer(DELTANET, (2 * k_heads * dk + v_heads * dv) * conv, v_heads * dk * dv, count)
    d_state = first_int(cfg, "mamba_d_state", "ssm_state_size", "state_size", "d_state")
    expand = _num(cfg, "mamba_expand", "expand")
    if d_state is None:
        return None
    n_heads = first_int(cfg, "mamba_n_heads", "mamba_num_heads")
    head_dim = first_int(cfg, "mamba_d_head", "mamba_head_dim")
    if model_type == "mamba2":
        n_heads, head_dim = first_int(cfg, "num_heads"), first_int(cfg, "head_dim")
    inner = first_int(cfg, "mamba_d_ssm")
    if inner is None and model_type == "nemotron_h" and n_heads and head_dim:
        inner = n_heads * head_dim
    if inner is None and expand and hidden:
        inner = int(expand * hidden)
    if inner is None and model_type == "mamba":
        inner = first_int(cfg, "intermediate_size")
    if inner is None:
        return None
    if n_heads and head_dim:  # Mamba-2: x, B, C through the convolution; per-head states
        groups = first_int(cfg, "mamba_n_groups", "n_groups") or 1
        return StateLayer(MAMBA2, (inner + 2 * groups * d_state) * conv, n_heads * head_dim * d_state, count)
    return StateLayer(MAMBA, inner * conv, inner * d_state, count)


_PATTERN = {"M": "mamba", "*": "full_attention", "-": "mlp", "E": "moe"}


def layer_types_from_fields(cfg: Mapping, model_type: str, layers: int) -> list[str] | None:
    """Per-layer types from config.json's fields as written, where transformers computes
    them in a config property (for when transformers is not installed): Jamba's
    attn_layer_period/offset, Bamba's attn_layer_indices, Qwen3-Next's
    full_attention_interval, Nemotron-H's hybrid_override_pattern, Falcon-H1's
    attention-and-Mamba layers, pure Mamba."""
    types = cfg.get("layer_types")
    if isinstance(types, (list, tuple)) and len(types) == layers:
        return list(types)
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) == layers and set(pattern) <= set(_PATTERN):
        return [_PATTERN[c] for c in pattern]
    period, offset = cfg.get("attn_layer_period"), cfg.get("attn_layer_offset")
    if isinstance(period, int) and period > 0 and isinstance(offset, int):
        return ["full_attention" if i % period == offset else "mamba" for i in range(layers)]
    if model_type == "bamba":
        indices = cfg.get("attn_layer_indices") or ()
        return ["full_attention" if i in indices else "mamba" for i in range(layers)]
    interval = cfg.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0:
        return ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    if model_type == "falcon_h1":
        return ["hybrid"] * layers
    if model_type in ("mamba", "mamba2", "falcon_mamba"):
        return ["mamba"] * layers
    return None


def state_layers(cfg: Mapping, model_type: str, layer_types) -> tuple[StateLayer, ...]:
    """The state layers of a config whose per-layer types are ``layer_types``."""
    if not isinstance(layer_types, (list, tuple)):
        return ()
    count = sum(1 for t in layer_types if t in STATE_TYPES)
    if not count:
        return ()
    layer = _state_layer(cfg, model_type, count)
    return (layer,) if layer is not None else ()


def describe(layers: tuple[StateLayer, ...]) -> str:
    return " + ".join(
        f"{s.count} × {s.kind} (conv {s.conv:,} + recurrent {s.recurrent:,} elements per sequence)"
        for s in layers
    )
