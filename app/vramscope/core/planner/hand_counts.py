"""Hand formulas for the families whose layouts are simple to write down:
Llama, Mistral, Qwen2, Qwen3, Gemma (one decoder layer of q/k/v/o and a
gated MLP) and GPT-2. Every weight tensor is counted (tied embeddings,
grouped-query attention, an explicit ``head_dim`` and each family's biases
come out exact); tests check each against transformers' own model built on
the meta device. Any other family goes to meta_count.
"""

from __future__ import annotations

from vramscope.core.planner.model_shape import CONFIG, ConfigNotUnderstood, Linear, ModelShape, llama_linears

LLAMA_FAMILY = ("llama", "mistral", "qwen2", "qwen3", "gemma")
GPT2_FAMILY = ("gpt2",)
HAND_FAMILIES = LLAMA_FAMILY + GPT2_FAMILY
COUNTED_BY = "hand formula"

# tie_word_embeddings default of each transformers config class when absent.
_TIED_DEFAULT = {
    "llama": False,
    "mistral": False,
    "qwen2": False,
    "qwen3": False,
    "gemma": True,
    "gpt2": True,
}


class Reader:
    """Reads config fields and remembers which were used."""

    def __init__(self, config: dict, model_type: str):
        self.config = config
        self.model_type = model_type
        self.used: list[str] = [f"model_type={model_type}"]
        self.notes: list[str] = []

    def int(self, key: str, *alternatives: str, default=None):
        for k in (key, *alternatives):
            if k in self.config and self.config[k] is not None:
                value = self.config[k]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigNotUnderstood(
                        f"config.json field {k!r} should be an integer, found {value!r}"
                    )
                if value <= 0:
                    raise ConfigNotUnderstood(f"config.json field {k!r} should be positive, found {value}")
                self.used.append(f"{k}={value}")
                return value
        if default is None:
            raise ConfigNotUnderstood(
                f"config.json ({self.model_type}) has no {key!r}: cannot count the parameters"
            )
        return default

    def bool(self, key: str, default: bool, why: str):
        if key in self.config and self.config[key] is not None:
            value = self.config[key]
            if not isinstance(value, bool):
                raise ConfigNotUnderstood(f"config.json field {key!r} should be true/false, found {value!r}")
            self.used.append(f"{key}={str(value).lower()}")
            return value
        self.notes.append(f"{key} absent: {str(default).lower()} ({why})")
        return default


def _count(linears: tuple[Linear, ...]) -> tuple[int, int]:
    params = sum(
        lin.in_features * lin.out_features + (lin.out_features if lin.bias else 0) for lin in linears
    )
    tensors = sum(2 if lin.bias else 1 for lin in linears)
    return params, tensors


def hand_shape(config: dict, model_type: str) -> ModelShape:
    if model_type in GPT2_FAMILY:
        return _gpt2(config)
    return _llama_family(config, model_type)


def _llama_family(config: dict, model_type: str) -> ModelShape:
    r = Reader(config, model_type)
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
                f"config.json: hidden_size {hidden} is not divisible by num_attention_heads "
                f"{heads} and there is no head_dim"
            )
        head_dim = hidden // heads
        r.notes.append(f"head_dim absent: hidden_size / num_attention_heads = {head_dim}")
    if heads % kv_heads:
        raise ConfigNotUnderstood(
            f"config.json: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
        )
    tied = r.bool("tie_word_embeddings", _TIED_DEFAULT[model_type], f"the {model_type} default")
    if model_type == "qwen2":
        qkv_bias, o_bias = True, False
        r.notes.append("qwen2: q/k/v projections carry biases, o_proj none (Qwen2Attention)")
    elif model_type in ("llama", "qwen3", "gemma"):
        attention_bias = r.bool("attention_bias", False, f"the {model_type} default")
        qkv_bias = o_bias = attention_bias
    else:  # mistral: no biases
        qkv_bias = o_bias = False
    mlp_bias = r.bool("mlp_bias", False, "the llama default") if model_type == "llama" else False

    linears = llama_linears(
        hidden, heads, kv_heads, head_dim, intermediate, qkv_bias, o_bias, mlp_bias, count=layers
    )
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
        params=params,
        tensors=tensors,
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
        learned_positions=False,
        source=CONFIG,
        counted_by=COUNTED_BY,
        fields_used=tuple(r.used),
        notes=tuple(r.notes),
    )


def _gpt2(config: dict) -> ModelShape:
    r = Reader(config, "gpt2")
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
        raise ConfigNotUnderstood(f"config.json: n_embd {hidden} is not divisible by n_head {heads}")
    tied = r.bool("tie_word_embeddings", True, "GPT-2 ties lm_head to wte")
    linears = (  # Conv1D modules, all with biases
        Linear("attn.c_attn", hidden, 3 * hidden, True, layers),
        Linear("attn.c_proj", hidden, hidden, True, layers),
        Linear("mlp.c_fc", hidden, inner, True, layers),
        Linear("mlp.c_proj", inner, hidden, True, layers),
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
        params=params,
        tensors=tensors,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=hidden // heads,
        intermediate=inner,
        vocab=vocab,
        max_positions=positions,
        max_positions_field="n_positions",
        tied_embeddings=tied,
        learned_positions=True,
        model_type="gpt2",
        layer_linears=linears,
        source=CONFIG,
        counted_by=COUNTED_BY,
        fields_used=tuple(r.used),
        notes=tuple(r.notes),
    )
