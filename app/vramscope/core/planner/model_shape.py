"""The shape of a model, from a parameter count or a Hugging Face config.json.

``shape_from_config(config)`` understands decoder-only configs of the Llama
family (llama, mistral, qwen2, qwen3, gemma) and GPT-2. It counts every weight
tensor (so tied embeddings, grouped-query attention, an explicit ``head_dim``
and the biases of each family come out exact), records which fields it read
and what it assumed, and refuses -- with :class:`ConfigNotUnderstood` -- any
config it cannot count exactly (other model types, mixture-of-experts,
multimodal, missing or inconsistent fields). A wrong parameter count is worse
than no count.

``shape_from_params(n, layers=..., ...)`` is the plain-number input; the
layer figures are optional and only needed for activations, the KV cache
and LoRA adapters.
"""

from __future__ import annotations

from dataclasses import dataclass

LLAMA_FAMILY = ("llama", "mistral", "qwen2", "qwen3", "gemma")
GPT2_FAMILY = ("gpt2",)
UNDERSTOOD = LLAMA_FAMILY + GPT2_FAMILY

# tie_word_embeddings default of each transformers config class when absent.
_TIED_DEFAULT = {"llama": False, "mistral": False, "qwen2": False, "qwen3": False,
                 "gemma": True, "gpt2": True}
# Linear modules PEFT's LoRA targets by default
# (peft's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
_LORA_DEFAULT = {"llama": ("q_proj", "v_proj"), "mistral": ("q_proj", "v_proj"),
                 "qwen2": ("q_proj", "v_proj"), "qwen3": ("q_proj", "v_proj"),
                 "gemma": ("q_proj", "v_proj"), "gpt2": ("c_attn",)}
_MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size")


class ConfigNotUnderstood(ValueError):
    """A config.json the planner cannot count exactly; the message says why."""


@dataclass(frozen=True, slots=True)
class Linear:
    """One linear module inside every layer: its name and in/out features."""

    name: str  # "self_attn.q_proj", "mlp.c_fc", ...
    in_features: int
    out_features: int
    bias: bool = False


@dataclass(frozen=True, slots=True)
class ModelShape:
    params: int
    tensors: int | None = None  # number of parameter tensors (None: unknown)
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate: int | None = None
    vocab: int | None = None
    max_positions: int | None = None
    tied_embeddings: bool | None = None
    model_type: str | None = None  # "llama", ..., None for a plain count
    layer_linears: tuple[Linear, ...] = ()  # the linear modules of one layer
    lora_default_modules: tuple[str, ...] = ()
    source: str = "parameter count"
    fields_used: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def has_kv_shape(self) -> bool:
        return None not in (self.layers, self.kv_heads, self.head_dim)

    @property
    def has_activation_shape(self) -> bool:
        return None not in (self.layers, self.hidden, self.heads)

    @property
    def kv_bytes_per_token_element(self) -> int | None:
        """2 * L * H_kv * d_head: K and V elements per token (times dtype bytes)."""
        if not self.has_kv_shape:
            return None
        return 2 * self.layers * self.kv_heads * self.head_dim

    @property
    def quantizable_params(self) -> int | None:
        """The weight matrices of the linear layers: what 8/4-bit loaders
        quantize. Embeddings, the output head, norms and biases stay 16-bit.
        Known only for a config (a plain count has no layout)."""
        if self.source != "config.json" or not self.layer_linears or self.layers is None:
            return None
        return self.layers * sum(lin.in_features * lin.out_features for lin in self.layer_linears)

    def linear_names(self) -> tuple[str, ...]:
        return tuple(lin.name for lin in self.layer_linears)

    def lora_targets(self, modules: tuple[str, ...]) -> tuple[Linear, ...]:
        """The per-layer linears that LoRA module names select, PEFT style: a
        name matches the full module name or its last components
        ("c_proj" selects attn.c_proj and mlp.c_proj). 'all-linear' selects
        every linear inside the layers (not the output head, as in PEFT)."""
        if not self.layer_linears:
            raise ValueError(
                "LoRA adapter sizes need the layer shapes: give --config config.json, "
                "or --layers, --hidden, --heads and --intermediate with --params")
        if tuple(modules) == ("all-linear",):
            return self.layer_linears
        chosen: list[Linear] = []
        for wanted in modules:
            hits = [lin for lin in self.layer_linears
                    if lin.name == wanted or lin.name.endswith("." + wanted)]
            if not hits:
                raise ValueError(
                    f"LoRA module {wanted!r} is not a linear layer of this model; "
                    f"choose from {', '.join(self.short_linear_names())} or all-linear")
            for lin in hits:
                if lin not in chosen:
                    chosen.append(lin)
        return tuple(chosen)

    def short_linear_names(self) -> tuple[str, ...]:
        seen: list[str] = []
        for name in self.linear_names():
            short = name.rsplit(".", 1)[-1]
            if short not in seen:
                seen.append(short)
        return tuple(seen)

    def lora_params(self, rank: int, modules: tuple[str, ...]) -> tuple[int, int]:
        """(adapter parameters, adapter tensors): r*(in+out) per targeted linear
        per layer -- the A (r x in) and B (out x r) matrices of LoRA."""
        if rank <= 0:
            raise ValueError("the LoRA rank must be a positive integer")
        targets = self.lora_targets(modules)
        per_layer = sum(rank * (lin.in_features + lin.out_features) for lin in targets)
        return per_layer * self.layers, 2 * len(targets) * self.layers


# --- plain parameter count ---------------------------------------------------


def shape_from_params(params: int, *, layers: int | None = None, hidden: int | None = None,
                      heads: int | None = None, kv_heads: int | None = None,
                      head_dim: int | None = None, intermediate: int | None = None,
                      vocab: int | None = None) -> ModelShape:
    """A model known by its parameter count; layer figures optional."""
    if not isinstance(params, int) or params <= 0:
        raise ValueError("the parameter count must be a positive integer")
    for name, value in (("layers", layers), ("hidden", hidden), ("heads", heads),
                        ("kv_heads", kv_heads), ("head_dim", head_dim),
                        ("intermediate", intermediate), ("vocab", vocab)):
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise ValueError(f"--{name.replace('_', '-')} must be a positive integer")
    notes = []
    if kv_heads is None and heads is not None:
        kv_heads = heads
        notes.append("KV heads not given: taken equal to the attention heads (no GQA)")
    if head_dim is None and hidden is not None and heads is not None:
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads: "
                             "give --head-dim")
        head_dim = hidden // heads
        notes.append(f"head dim not given: hidden / heads = {head_dim}")
    if kv_heads is not None and heads is not None and heads % kv_heads:
        raise ValueError(f"{heads} attention heads cannot be grouped over {kv_heads} KV heads")
    linears: tuple[Linear, ...] = ()
    if None not in (hidden, heads, kv_heads, head_dim, intermediate):
        linears = _llama_linears(hidden, heads, kv_heads, head_dim, intermediate, False, False)
        notes.append("layer modules assumed Llama-style (q/k/v/o_proj, gate/up/down_proj) "
                     "for LoRA")
    return ModelShape(
        params=params, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, intermediate=intermediate, vocab=vocab,
        layer_linears=linears,
        lora_default_modules=("q_proj", "v_proj") if linears else (),
        source="parameter count", notes=tuple(notes))


# --- Hugging Face config.json --------------------------------------------------


class _Reader:
    """Reads config fields and remembers which were used."""

    def __init__(self, config: dict, model_type: str):
        self.config = config
        self.model_type = model_type
        self.used: list[str] = []
        self.notes: list[str] = []

    def int(self, key: str, *alternatives: str, default=None, positive=True):
        for k in (key, *alternatives):
            if k in self.config and self.config[k] is not None:
                value = self.config[k]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigNotUnderstood(f"config.json field {k!r} should be an integer, "
                                              f"found {value!r}")
                if positive and value <= 0:
                    raise ConfigNotUnderstood(f"config.json field {k!r} should be positive, "
                                              f"found {value}")
                self.used.append(f"{k}={value}")
                return value
        if default is None:
            raise ConfigNotUnderstood(
                f"config.json ({self.model_type}) has no {key!r}: cannot count the parameters")
        return default

    def bool(self, key: str, default: bool, why: str):
        if key in self.config and self.config[key] is not None:
            value = self.config[key]
            if not isinstance(value, bool):
                raise ConfigNotUnderstood(f"config.json field {key!r} should be true/false, "
                                          f"found {value!r}")
            self.used.append(f"{key}={str(value).lower()}")
            return value
        self.notes.append(f"{key} absent: {str(default).lower()} ({why})")
        return default


def _model_type(config: dict) -> str:
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type:
        return model_type
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        arch = archs[0].lower()
        for known in ("qwen3", "qwen2", "mistral", "gemma", "llama", "gpt2"):
            if arch.startswith(known):
                return known
    raise ConfigNotUnderstood(
        "config.json has no model_type (and no known architectures entry): "
        f"vramscope reads {', '.join(UNDERSTOOD)} configs; give --params instead")


def shape_from_config(config: dict) -> ModelShape:
    """Parameters, layers, heads, KV heads, head dim... from a config.json dict."""
    if not isinstance(config, dict):
        raise ConfigNotUnderstood("config.json must hold a JSON object")
    if "text_config" in config or "vision_config" in config:
        raise ConfigNotUnderstood(
            "config.json is a multimodal model (text_config/vision_config): not understood; "
            "give --params instead")
    model_type = _model_type(config)
    if model_type not in UNDERSTOOD:
        raise ConfigNotUnderstood(
            f"config.json has model_type {model_type!r}: vramscope counts only "
            f"{', '.join(UNDERSTOOD)} decoder configs exactly; give --params instead")
    moe = [k for k in _MOE_KEYS if config.get(k)]
    if moe:
        raise ConfigNotUnderstood(
            f"config.json describes a mixture-of-experts model ({moe[0]}): not understood; "
            "give --params instead")
    if model_type in GPT2_FAMILY:
        return _gpt2(config)
    return _llama_family(config, model_type)


def _llama_linears(hidden, heads, kv_heads, head_dim, intermediate, qkv_bias, o_bias,
                   mlp_bias=False) -> tuple[Linear, ...]:
    return (
        Linear("self_attn.q_proj", hidden, heads * head_dim, qkv_bias),
        Linear("self_attn.k_proj", hidden, kv_heads * head_dim, qkv_bias),
        Linear("self_attn.v_proj", hidden, kv_heads * head_dim, qkv_bias),
        Linear("self_attn.o_proj", heads * head_dim, hidden, o_bias),
        Linear("mlp.gate_proj", hidden, intermediate, mlp_bias),
        Linear("mlp.up_proj", hidden, intermediate, mlp_bias),
        Linear("mlp.down_proj", intermediate, hidden, mlp_bias),
    )


def _count(linears: tuple[Linear, ...]) -> tuple[int, int]:
    params = sum(lin.in_features * lin.out_features + (lin.out_features if lin.bias else 0)
                 for lin in linears)
    tensors = sum(2 if lin.bias else 1 for lin in linears)
    return params, tensors


def _llama_family(config: dict, model_type: str) -> ModelShape:
    r = _Reader(config, model_type)
    r.used.append(f"model_type={model_type}")
    hidden = r.int("hidden_size")
    layers = r.int("num_hidden_layers")
    heads = r.int("num_attention_heads")
    vocab = r.int("vocab_size")
    intermediate = r.int("intermediate_size")
    if config.get("num_key_value_heads") is not None:
        kv_heads = r.int("num_key_value_heads")
    else:
        kv_heads = heads
        r.notes.append("num_key_value_heads absent: equal to num_attention_heads (no GQA)")
    if config.get("head_dim") is not None:
        head_dim = r.int("head_dim")
    else:
        if hidden % heads:
            raise ConfigNotUnderstood(
                f"config.json: hidden_size {hidden} is not divisible by "
                f"num_attention_heads {heads} "
                "and there is no head_dim")
        head_dim = hidden // heads
        r.notes.append(f"head_dim absent: hidden_size / num_attention_heads = {head_dim}")
    if heads % kv_heads:
        raise ConfigNotUnderstood(
            f"config.json: num_attention_heads {heads} is not a multiple of "
            f"num_key_value_heads {kv_heads}")
    tied = r.bool("tie_word_embeddings", _TIED_DEFAULT[model_type],
                  f"the {model_type} default")
    if model_type == "qwen2":
        qkv_bias, o_bias = True, False
        r.notes.append("qwen2: q/k/v projections carry biases, o_proj none (Qwen2Attention)")
    elif model_type == "llama":
        attention_bias = r.bool("attention_bias", False, "the llama default")
        qkv_bias = o_bias = attention_bias
    elif model_type in ("qwen3", "gemma"):
        attention_bias = r.bool("attention_bias", False, f"the {model_type} default")
        qkv_bias = o_bias = attention_bias
    else:  # mistral: no biases
        qkv_bias = o_bias = False
    mlp_bias = r.bool("mlp_bias", False, "the llama default") if model_type == "llama" else False
    max_positions = None
    if config.get("max_position_embeddings") is not None:
        max_positions = r.int("max_position_embeddings")
    if config.get("sliding_window") and model_type == "mistral":
        r.notes.append(f"sliding_window={config['sliding_window']}: some servers cap the "
                       "cache per sequence at that many tokens; the plan does not")

    linears = _llama_linears(hidden, heads, kv_heads, head_dim, intermediate,
                             qkv_bias, o_bias, mlp_bias)
    layer_params, layer_tensors = _count(linears)
    layer_params += 2 * hidden  # input_layernorm + post_attention_layernorm (RMSNorm weights)
    layer_tensors += 2
    if model_type == "qwen3":  # per-head RMSNorm on q and k
        layer_params += 2 * head_dim
        layer_tensors += 2
        r.notes.append("qwen3: q_norm and k_norm (head_dim weights each) per layer")
    embed = vocab * hidden
    params = layers * layer_params + embed + hidden  # + final norm
    tensors = layers * layer_tensors + 2
    if not tied:
        params += embed  # lm_head
        tensors += 1
    return ModelShape(
        params=params, tensors=tensors, layers=layers, hidden=hidden, heads=heads,
        kv_heads=kv_heads, head_dim=head_dim, intermediate=intermediate, vocab=vocab,
        max_positions=max_positions, tied_embeddings=tied, model_type=model_type,
        layer_linears=linears,
        lora_default_modules=_LORA_DEFAULT[model_type], source="config.json",
        fields_used=tuple(r.used), notes=tuple(r.notes))


def _gpt2(config: dict) -> ModelShape:
    r = _Reader(config, "gpt2")
    r.used.append("model_type=gpt2")
    hidden = r.int("n_embd", "hidden_size")
    layers = r.int("n_layer", "num_hidden_layers")
    heads = r.int("n_head", "num_attention_heads")
    vocab = r.int("vocab_size")
    positions = r.int("n_positions", "max_position_embeddings")
    if config.get("n_inner") is not None:
        inner = r.int("n_inner")
    else:
        inner = 4 * hidden
        r.notes.append(f"n_inner absent: 4 * n_embd = {inner} (GPT2MLP)")
    if hidden % heads:
        raise ConfigNotUnderstood(
            f"config.json: n_embd {hidden} is not divisible by n_head {heads}")
    tied = r.bool("tie_word_embeddings", True, "GPT-2 ties lm_head to wte")
    linears = (  # Conv1D modules, all with biases
        Linear("attn.c_attn", hidden, 3 * hidden, True),
        Linear("attn.c_proj", hidden, hidden, True),
        Linear("mlp.c_fc", hidden, inner, True),
        Linear("mlp.c_proj", inner, hidden, True),
    )
    layer_params, layer_tensors = _count(linears)
    layer_params += 4 * hidden  # ln_1, ln_2: weight + bias each
    layer_tensors += 4
    wte = vocab * hidden
    params = wte + positions * hidden + layers * layer_params + 2 * hidden  # + ln_f
    tensors = 2 + layers * layer_tensors + 2
    if not tied:
        params += wte
        tensors += 1
    return ModelShape(
        params=params, tensors=tensors, layers=layers, hidden=hidden, heads=heads,
        kv_heads=heads, head_dim=hidden // heads, intermediate=inner, vocab=vocab,
        max_positions=positions, tied_embeddings=tied, model_type="gpt2",
        layer_linears=linears,
        lora_default_modules=_LORA_DEFAULT["gpt2"], source="config.json",
        fields_used=tuple(r.used), notes=tuple(r.notes))
