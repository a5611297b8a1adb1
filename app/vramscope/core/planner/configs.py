"""config.json -> ModelShape: exact parameter counts, KV layout per layer,
MoE, quantisation, LoRA defaults and the context limit.

The hand formulas (hand_counts) count the families they cover; any other
model type is built by transformers on the meta device (meta_count). The
shape says which path counted it (``counted_by``). A wrong count is worse
than none: a config neither path can count exactly is refused with the
reason.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from vramscope.core.planner import kv_layout
from vramscope.core.planner import checkpoint, ssm_state
from vramscope.core.planner.checkpoint import Counts
from vramscope.core.planner.config_source import EXTRA
from vramscope.core.planner.hand_counts import HAND_FAMILIES, hand_shape
from vramscope.core.planner.meta_count import meta_shape
from vramscope.core.planner.meta_model import transformers_version
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.model_shape import (
    CONFIG,
    ENCODER,
    ENCODER_DECODER,
    ConfigNotUnderstood,
    ModelShape,
    shape_from_params,
)
from vramscope.core.planner.quantization import scheme_from_config
from vramscope.core.planner.ssm_state import first_int

# Architecture class -> model_type, for configs that lack model_type. Exact
# names only: Gemma2ForCausalLM is not Gemma.
_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "GPT2LMHeadModel": "gpt2",
    "MixtralForCausalLM": "mixtral",
    "Phi3ForCausalLM": "phi3",
    "FalconForCausalLM": "falcon",
    "OPTForCausalLM": "opt",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Qwen2MoeForCausalLM": "qwen2_moe",
}

# Modules PEFT's LoRA targets by default, per model type
# (peft.utils.constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING);
# peft's own table is used when peft is installed.
PEFT_LORA_DEFAULTS = {
    "llama": ("q_proj", "v_proj"),
    "mistral": ("q_proj", "v_proj"),
    "mixtral": ("q_proj", "v_proj"),
    "qwen2": ("q_proj", "v_proj"),
    "qwen2_moe": ("q_proj", "v_proj"),
    "qwen3": ("q_proj", "v_proj"),
    "gemma": ("q_proj", "v_proj"),
    "gemma2": ("q_proj", "v_proj"),
    "gemma3_text": ("q_proj", "v_proj"),
    "opt": ("q_proj", "v_proj"),
    "gpt2": ("c_attn",),
    "falcon": ("query_key_value",),
    "phi3": ("qkv_proj",),
    "phi": ("q_proj", "v_proj", "fc1", "fc2"),
    "gpt_neox": ("query_key_value",),
    "bloom": ("query_key_value",),
    "gpt_bigcode": ("c_attn",),
    "gptj": ("q_proj", "v_proj"),
    "stablelm": ("q_proj", "v_proj"),
    "starcoder2": ("q_proj", "v_proj"),
}
_POSITION_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")


def model_type_of(config: dict) -> str:
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type:
        return model_type
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and archs[0] in _ARCHITECTURES:
        return _ARCHITECTURES[archs[0]]
    raise ConfigNotUnderstood(
        "config.json has no model_type (and its architectures entry is not one the planner "
        "can name): add model_type, or give the parameter count instead"
    )


def lora_defaults(model_type: str, shape: ModelShape) -> tuple[tuple[str, ...], str | None]:
    """(PEFT's default LoRA target modules for the model type, a note or None)."""
    table = PEFT_LORA_DEFAULTS
    if "peft" in sys.modules:  # importing peft costs seconds (torch, transformers): only if loaded
        try:
            from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING

            table = {
                **table,
                **{k: tuple(v) for k, v in TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING.items()},
            }
        except Exception:  # peft reorganised: the table above
            pass
    names = set(shape.short_linear_names())
    wanted = table.get(model_type)
    if wanted and all(w in names for w in wanted):
        return tuple(wanted), None
    if {"q_proj", "v_proj"} <= names:
        return ("q_proj", "v_proj"), (f"PEFT names no LoRA default for {model_type}: q_proj, v_proj assumed")
    attention = tuple(
        dict.fromkeys(lin.short for lin in shape.layer_linears if not lin.expert and "att" in lin.name)
    )
    if attention:
        return attention, (
            f"PEFT names no LoRA default for {model_type}: planned on the "
            f"attention projections ({', '.join(attention)}); choose the "
            "LoRA modules to override"
        )
    return ("all-linear",), f"PEFT names no LoRA default for {model_type}: all linear layers"


# RoPE scalings whose ``factor`` stretches the trained length (transformers'
# modeling_rope_utils: dynamic NTK and YaRN take max_position_embeddings, or
# original_max_position_embeddings where given, as the trained length). Linear,
# llama3 and longrope configs already give the extended length in
# max_position_embeddings (Gemma 3, Llama 3.1, Phi-3-128k).
_STRETCHING = ("dynamic", "yarn")


def _rope_scaling(cfg: dict) -> dict | None:
    for key in ("rope_scaling", "rope_parameters"):
        v = cfg.get(key)
        if isinstance(v, dict) and (v.get("rope_type") or v.get("type")) not in (None, "default"):
            return v
    return None


def _max_positions(cfg: dict, shape: ModelShape) -> tuple[int | None, str | None, list[str]]:
    notes = []
    for f in _POSITION_FIELDS:
        v = cfg.get(f)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            scaling = _rope_scaling(cfg)
            if scaling is None:
                return v, f, notes
            kind = scaling.get("rope_type") or scaling.get("type")
            factor = scaling.get("factor")
            original = scaling.get("original_max_position_embeddings") or cfg.get(
                "original_max_position_embeddings"
            )
            original = original if isinstance(original, int) and original > 0 else None
            trained = f" (trained at {original:,} tokens)" if original else ""
            if kind in _STRETCHING and isinstance(factor, (int, float)) and factor > 1:
                stretched = int(factor * (original or v))
                if stretched > v:
                    notes.append(
                        f"rope_scaling {kind} × {factor:g}{trained}: the limit is "
                        f"{factor:g} × {original or v:,} = {stretched:,} tokens"
                    )
                    return stretched, f"rope_scaling ({kind} × {factor:g})", notes
            notes.append(f"rope_scaling {kind}{trained}: the limit is {f} = {v:,}")
            return v, f, notes
    return shape.max_positions, shape.max_positions_field, notes


# No published model comes near these: a config past them is refused in one
# line (10**30 layers would otherwise build a list of 10**30 layer types).
MAX_CONFIG_NUMBER = 2**53  # any number (JSON's exact-integer range, RFC 8259 section 6)
MAX_LAYERS = 100_000  # per-layer lists are built from these
_LAYER_FIELDS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    "num_experts",
    "n_routed_experts",
    "num_local_experts",
    "layer_types",
)


def check_sizes(config, where: str = "config.json", depth: int = 0) -> None:
    """ConfigNotUnderstood for a number no model has (NaN, inf, past 2**53, a layer
    count past MAX_LAYERS) or nesting deeper than any config's."""
    if depth > 16:
        raise ConfigNotUnderstood(f"{where} is nested deeper than any model config")
    items = (
        config.items() if isinstance(config, dict) else enumerate(config) if isinstance(config, list) else ()
    )
    for key, value in items:
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and not abs(value) <= MAX_CONFIG_NUMBER:
            raise ConfigNotUnderstood(
                f"{where} has {key} = {str(value)[:40]}, a number no model config holds"
            )
        if key in _LAYER_FIELDS and isinstance(value, int) and value > MAX_LAYERS:
            raise ConfigNotUnderstood(
                f"{where} has {key} = {value:,}: more than the {MAX_LAYERS:,} the planner counts"
            )
        if isinstance(value, (dict, list)):
            check_sizes(value, where, depth + 1)


def shape_from_config(config: dict) -> ModelShape:
    """Parameters, layers, heads, KV layout... from a config.json dict."""
    if not isinstance(config, dict):
        raise ConfigNotUnderstood("config.json must hold a JSON object")
    check_sizes(config)
    model_type = model_type_of(config)
    normalised = config
    if model_type in HAND_FAMILIES and not ("text_config" in config or "vision_config" in config):
        shape = hand_shape(config, model_type)
    else:
        if transformers_version() is None:
            raise ConfigNotUnderstood(
                f"config.json has model_type {model_type!r}: the hand formulas cover "
                f"{', '.join(HAND_FAMILIES)}; any other family is counted from its checkpoint's "
                f"safetensors headers (--model, {EXTRA}) or by transformers with torch on the "
                "meta device (pip install transformers torch), or give the parameter count"
            )
        shape, normalised = meta_shape(config, model_type)
    return finish(shape, {**normalised, **{k: v for k, v in config.items() if k not in normalised}})


def needs_transformers(config: dict) -> bool:
    model_type = model_type_of(config)
    return model_type not in HAND_FAMILIES or "text_config" in config or "vision_config" in config


def shape_with_checkpoint(config: dict, counts: Counts | None) -> ModelShape:
    """The shape of a config whose checkpoint's safetensors headers may be known: the
    checkpoint's exact count; without transformers, the layout from config.json fields."""
    if counts and needs_transformers(config) and transformers_version() is None:
        return shape_from_counts(config, counts)
    return checkpoint.with_checkpoint(shape_from_config(config), counts)


def shape_from_counts(config: dict, counts: Counts) -> ModelShape:
    """A model counted by its checkpoint (no transformers here): the layers, heads and
    KV layout read from config.json's fields as written."""
    model_type = model_type_of(config)
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    cfg = {**text, **{k: v for k, v in config.items() if k not in text and k != "text_config"}}
    encdec = bool(config.get("is_encoder_decoder"))
    archs = config.get("architectures") or [""]
    encoder = (
        not encdec
        and isinstance(archs[0], str)
        and archs[0].endswith(("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "Model"))
        and not archs[0].endswith(("LMHeadModel",))
    )
    layers = first_int(
        cfg,
        *(("decoder_layers", "num_decoder_layers") if encdec else ()),
        "num_hidden_layers",
        "n_layer",
        "num_layers",
    )
    kwargs = dict(
        layers=layers,
        hidden=first_int(cfg, "hidden_size", "n_embd", "d_model"),
        heads=first_int(
            cfg, *(("decoder_attention_heads",) if encdec else ()), "num_attention_heads", "n_head"
        ),
        kv_heads=first_int(cfg, "num_key_value_heads", "num_kv_heads"),
        head_dim=first_int(cfg, *(("d_kv",) if encdec else ()), "head_dim"),
        intermediate=first_int(cfg, "intermediate_size", "ffn_dim", "n_inner"),
        vocab=first_int(cfg, "vocab_size"),
    )
    total = sum(n for _, n in counts)
    try:
        shape = shape_from_params(total, **kwargs)
    except PlanError:  # figures that do not divide: the count alone
        shape = shape_from_params(total)
    types = ssm_state.layer_types_from_fields(cfg, model_type, layers) if layers else None
    if types is not None:
        cfg = {**cfg, "layer_types": types}
        if all(t in ("mamba", "linear_attention", "mlp", "moe") for t in types):
            shape = replace(shape, heads=None, kv_heads=None)  # SSM heads are not attention's
    state = ssm_state.state_layers(cfg, model_type, types)
    kind = ENCODER_DECODER if encdec else ENCODER if encoder else shape.kind
    kv = ()
    if encdec and None not in (shape.layers, shape.heads, shape.head_dim):
        kv = (
            kv_layout.KvLayer(kv_layout.FULL, 2 * shape.heads * shape.head_dim, None, shape.layers),
            kv_layout.cross_attention(shape.layers, shape.heads, shape.head_dim),
        )
    shape = replace(
        shape,
        model_type=model_type,
        source=CONFIG,
        state=state,
        kind=kind,
        kv=kv,
        counted_by="the checkpoint's safetensors headers",
        checkpoint=counts,
        notes=shape.notes
        + (
            f"counted from the checkpoint's safetensors headers "
            f"({checkpoint.describe(counts)}); the layout from "
            "config.json's fields (transformers is not "
            "installed)",
        ),
    )
    return finish(shape, cfg)


def finish(shape: ModelShape, cfg: dict) -> ModelShape:
    """KV layout, context limit, quantisation, dtype and LoRA defaults of a counted shape."""
    notes = list(shape.notes)
    used = list(shape.fields_used)
    kv, decompressed = shape.kv, shape.kv_decompressed
    if not kv and shape.state and shape.heads is None and shape.layers:  # attention-free
        kv = (kv_layout.KvLayer(kv_layout.STATE, 0, None, shape.layers),)
    elif not kv and None not in (shape.layers, shape.heads, shape.kv_heads, shape.head_dim):
        kv, decompressed, kv_notes = kv_layout.kv_layers(
            cfg,
            model_type=shape.model_type or "",
            layers=shape.layers,
            heads=shape.heads,
            kv_heads=shape.kv_heads,
            head_dim=shape.head_dim,
        )
        notes += kv_notes
        if any(k.kind == kv_layout.SLIDING for k in kv):
            used.append(f"sliding_window={cfg.get('sliding_window')}")
    max_positions, field, pos_notes = _max_positions(cfg, shape)
    notes += pos_notes
    if field and field in cfg and not any(u.startswith(f"{field}=") for u in used):
        used.append(f"{field}={max_positions}")
    quant = None
    if cfg.get("quantization_config") is not None:
        quant = scheme_from_config(cfg["quantization_config"])
        used.append(f"quantization_config={quant.label}")
        if not quant.sized:
            notes.append(
                f"quantization_config {quant.label}: a format the planner does not "
                "size; the weights are planned at 16 bits (an upper bound) unless a "
                "precision is chosen"
            )
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    shape = replace(
        shape,
        kv=kv,
        kv_decompressed=decompressed,
        max_positions=max_positions,
        max_positions_field=field,
        quantization=quant,
        dtype=dtype if isinstance(dtype, str) else None,
    )
    modules, lora_note = lora_defaults(shape.model_type or "", shape)
    if lora_note:
        notes.append(lora_note)
    return replace(
        shape, lora_default_modules=modules, fields_used=tuple(used), notes=tuple(dict.fromkeys(notes))
    )
