"""Exact counts for any architecture transformers knows: the model is built
on PyTorch's meta device (shapes only, no memory, no weights downloaded)
and its parameters are counted, each shared tensor once (``named_parameters``
deduplicates, so tied input/output embeddings count once).

The model is built by meta_model.py (transformers' own classes, never remote
code); what is read from it here: the parameters by part, the linear layers
(quantizable weights, routed experts), the fields of its text config.
"""

from __future__ import annotations

import re
from collections import Counter

from vramscope.core.planner import kv_layout, ssm_state
from vramscope.core.planner.meta_model import meta_model
from vramscope.core.planner.model_shape import (
    CONFIG,
    ENCODER,
    ENCODER_DECODER,
    Linear,
    ModelShape,
)

_INDEX = re.compile(r"\.\d+(?=\.|$)")
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "moe_topk", "top_k", "num_selected_experts")


def _pattern(name: str) -> str:
    """'model.layers.3.self_attn.q_proj' -> 'self_attn.q_proj' (per-layer module name)."""
    m = _INDEX.search(name)
    if m is None:
        return name
    return _INDEX.sub("", name[m.end() + 1 :]) or name


def _attr(cfg, *names):
    for n in names:
        v = getattr(cfg, n, None)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v, n
    return None, None


def meta_shape(config: dict, model_type: str) -> tuple[ModelShape, dict]:
    """(the ModelShape of a config counted on transformers' meta-device model, the
    config as transformers completes it: defaults, layer_types...)."""
    from torch import nn

    import transformers

    cfg, model, model_kind = meta_model(config, model_type)
    text = cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg
    named = list(model.named_parameters())  # each shared tensor once
    params = sum(p.numel() for _, p in named)
    parts: Counter = Counter()
    for name, p in named:
        parts[_part(name)] += p.numel()
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    out_weight = getattr(out, "weight", None)
    tied = out_weight is not None and id(out_weight) in embeddings

    groups: Counter = Counter()
    for name, mod in model.named_modules():
        kind = type(mod).__name__
        if not (isinstance(mod, nn.Linear) or kind == "Conv1D"):
            continue
        w = getattr(mod, "weight", None)
        if w is None or w.dim() != 2 or w is out_weight or id(w) in embeddings:
            continue
        n_out, n_in = w.shape if isinstance(mod, nn.Linear) else (w.shape[1], w.shape[0])
        expert = ".experts." in f".{name}."
        groups[(_pattern(name), int(n_in), int(n_out), mod.bias is not None, expert)] += 1
    for name, p in named:  # fused routed experts (transformers 5): one (E, out, in) tensor
        if p.dim() == 3 and ".experts." in f".{name}":
            e, n_out, n_in = p.shape
            groups[(_pattern(name), int(n_in), int(n_out), False, True)] += int(e)
    linears = tuple(Linear(n, i, o, b, c, x) for (n, i, o, b, x), c in groups.items())
    quantizable = sum(lin.count * lin.in_features * lin.out_features for lin in linears)

    decoder = model_kind == ENCODER_DECODER
    layers, f_layers = _attr(
        text,
        *(("decoder_layers", "num_decoder_layers") if decoder else ()),
        "num_hidden_layers",
        "n_layer",
        "num_layers",
    )
    hidden, f_hidden = _attr(text, "hidden_size", "n_embd", "d_model")
    types = _layer_types(text, layers)
    attention = types is None or any(t not in _NO_ATTENTION for t in types)
    # Mamba-2's num_heads are SSM heads, not attention heads
    heads, f_heads = _attr(
        text,
        *(("decoder_attention_heads",) if decoder else ()),
        "num_attention_heads",
        "n_head",
        *(("num_heads",) if attention else ()),
    )
    if not attention:
        heads, f_heads = None, None
    kv_heads, f_kv = _attr(text, "num_key_value_heads", "num_kv_heads", "n_head_kv")
    if getattr(text, "multi_query", False) and not getattr(text, "new_decoder_architecture", False):
        kv_heads, f_kv = 1, "multi_query"
    if kv_heads is None:
        kv_heads = heads
    if model_kind == ENCODER:  # an encoder keeps no KV cache
        kv_heads, f_kv = None, None
    head_dim, f_head_dim = _attr(text, *(("d_kv",) if decoder else ()), "head_dim")
    if head_dim is None and hidden and heads:
        head_dim = hidden // heads
    intermediate, f_inter = _attr(text, "intermediate_size", "ffn_dim", "n_inner")
    vocab, f_vocab = _attr(text, "vocab_size")
    used = [f"model_type={model_type}"] + [
        f"{f}={v}"
        for f, v in (
            (f_layers, layers),
            (f_hidden, hidden),
            (f_heads, heads),
            (f_kv, kv_heads),
            (f_head_dim, head_dim),
            (f_inter, intermediate),
            (f_vocab, vocab),
        )
        if f
    ]
    notes = []
    if model_kind == ENCODER:
        notes.append(
            f"{model_type} is an encoder ({type(model).__name__}): it keeps no KV "
            "cache; weights, training and activations are planned"
        )
    kv: tuple = ()
    if decoder and None not in (layers, heads, head_dim):
        self_attn = kv_layout.KvLayer(kv_layout.FULL, 2 * heads * head_dim, None, layers)
        kv = (self_attn, kv_layout.cross_attention(layers, heads, head_dim))
        encoder_layers, _ = _attr(text, "encoder_layers", "num_layers")
        notes.append(
            f"encoder-decoder: the whole model is counted ({type(model).__name__}); "
            f"the KV cache is the decoder's self-attention per generated token and its "
            f"cross-attention per source token ({layers} layers each), the source "
            "taken as long as the context"
            + (
                f"; activations over the {encoder_layers} encoder and {layers} decoder "
                "layers at the same length"
                if encoder_layers
                else ""
            )
        )
        if encoder_layers:
            layers += encoder_layers  # both stacks hold activations in training
    state = ssm_state.state_layers(text.to_dict(), model_type, types)
    if types is not None:
        kinds = Counter(types)
        used.append("layer types: " + ", ".join(f"{n} {t}" for t, n in kinds.items()))
    if state:
        notes.append(
            f"state-space / linear-attention layers: {ssm_state.describe(state)}; "
            "a constant state per sequence, not a per-token cache"
            + ("" if attention else "; no attention layer, so no KV cache")
        )
    vision = parts.get(VISION, 0)
    if vision:
        notes.append(
            f"multimodal: every part is counted ({_parts_text(parts)}); the KV cache "
            "and activations are planned for the language model (image tokens count "
            "toward the context), not the vision tower's per-image activations"
        )
    experts = None
    active = active_mlp = None
    n_experts, f_e = _attr(text, *_EXPERTS)
    top_k, f_k = _attr(text, *_TOP_K)
    expert_params = sum(
        lin.count * lin.in_features * lin.out_features + (lin.count * lin.out_features if lin.bias else 0)
        for lin in linears
        if lin.expert
    )
    if expert_params:
        if n_experts and top_k:
            experts = (n_experts, top_k)
            used += [f"{f_e}={n_experts}", f"{f_k}={top_k}"]
            active = params - expert_params * (n_experts - top_k) // n_experts
            per_expert, _ = _attr(text, "moe_intermediate_size", "intermediate_size")
            if per_expert:
                shared, _ = _attr(text, "shared_expert_intermediate_size")
                n_shared, _ = _attr(text, "n_shared_experts")
                active_mlp = top_k * per_expert + (shared or (n_shared or 0) * per_expert)
            notes.append(
                f"mixture of experts: all {n_experts} routed experts are held in "
                f"memory ({params:,} parameters); {top_k} per token are used, "
                f"{active:,} active parameters"
            )
        else:
            notes.append(
                "mixture of experts: all experts are held in memory; the active "
                "count is unknown (no experts-per-token field)"
            )
    learned = any(
        isinstance(m, nn.Embedding)
        and _part(name) != VISION
        and ("position" in name or name.endswith(("wpe", "embed_positions")))
        for name, m in model.named_modules()
    )
    normalised = text.to_dict()
    if types is not None:
        normalised["layer_types"] = list(types)
    shown_parts = tuple(parts.items()) if len(parts) > 1 else ()
    return ModelShape(
        params=params,
        tensors=len(named),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=intermediate,
        vocab=vocab,
        tied_embeddings=tied,
        model_type=model_type,
        layer_linears=linears,
        active_params=active,
        experts=experts,
        active_mlp=active_mlp,
        quantizable=quantizable,
        source=CONFIG,
        kv=kv,
        state=state,
        kind=model_kind,
        architecture=type(model).__name__,
        parts=shown_parts,
        learned_positions=learned,
        counted_by=f"transformers {transformers.__version__} on the meta device",
        fields_used=tuple(used),
        notes=tuple(notes),
    ), normalised


VISION = "vision tower"
_NO_ATTENTION = ("linear_attention", "mamba", "mamba2", "mlp", "moe")
_VISION_KEYS = ("vision", "visual", "image_", "patch_embed")


def _part(name: str) -> str:
    """The part of a multimodal or encoder-decoder checkpoint a parameter belongs to."""
    parts = name.split(".")
    if any(k in p for p in parts for k in _VISION_KEYS):
        return VISION
    if "multi_modal_projector" in parts or "mm_projector" in parts:
        return "multimodal projector"
    if parts[0] == "lm_head":
        return "output head"
    if "encoder" in parts:
        return "encoder"
    if "decoder" in parts:
        return "decoder"
    return "language model"


def _parts_text(parts: Counter) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in parts.items())


def _layer_types(text, layers: int | None) -> list[str] | None:
    """Per-layer types as transformers reads them: ``layer_types`` (a property on Jamba,
    Bamba, Falcon-H1, Nemotron-H... built from attn_layer_period/offset,
    attn_layer_indices, hybrid_override_pattern)."""
    try:
        types = getattr(text, "layer_types", None)
    except Exception:  # a property that cannot be computed from this config
        return None
    if (
        isinstance(types, (list, tuple))
        and types
        and all(isinstance(t, str) for t in types)
        and (layers is None or len(types) == layers)
    ):
        return list(types)
    return None
