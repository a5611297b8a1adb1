"""The shape of a model: what the planner needs to know about it.

A :class:`ModelShape` comes from a parameter count (``shape_from_params``,
layer figures optional), from a Hugging Face config.json
(``configs.shape_from_config``: hand formulas for the families they cover,
otherwise the model built by transformers on the meta device), or from a
live model the agent reports (``live.live_shape``). It records how it was
counted, which fields it read and what it assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramscope.core.planner import kv_layout
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.kv_layout import KvLayer
from vramscope.core.planner.quantization import QuantScheme
from vramscope.core.planner.ssm_state import StateLayer

PARAMETER_COUNT = "parameter count"
CONFIG = "config.json"

DECODER, ENCODER, ENCODER_DECODER = "decoder", "encoder", "encoder-decoder"


class ConfigNotUnderstood(PlanError):
    """A config.json the planner cannot count exactly; the message says why."""

    def __init__(self, message: str, field: str = "config"):
        super().__init__(field, message)


@dataclass(frozen=True, slots=True)
class Linear:
    """A linear weight matrix of the model, ``count`` times (once per layer...)."""

    name: str  # "self_attn.q_proj", "mlp.experts.gate_up_proj", ...
    in_features: int
    out_features: int
    bias: bool = False
    count: int = 1
    expert: bool = False  # a routed expert's matrix (all held, k of E used per token)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


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
    max_positions_field: str | None = None
    tied_embeddings: bool | None = None
    model_type: str | None = None  # "llama", ..., None for a plain count
    layer_linears: tuple[Linear, ...] = ()  # the linear matrices inside the layers
    lora_default_modules: tuple[str, ...] = ()
    kv: tuple[KvLayer, ...] = ()  # () = uniform full attention from layers/kv_heads/head_dim
    kv_decompressed: int | None = None  # MLA: K/V elements per token if decompressed
    active_params: int | None = None  # MoE: parameters used per token (None: dense)
    experts: tuple[int, int] | None = None  # MoE: (routed experts, used per token)
    active_mlp: int | None = None  # MoE: MLP width a token passes through (k experts + shared)
    quantizable: int | None = None  # weights of the linear matrices (what quantisers pack)
    quantization: QuantScheme | None = None  # the config's quantization_config
    dtype: str | None = None  # torch_dtype of the checkpoint
    state: tuple[StateLayer, ...] = ()  # state-space / linear-attention layers' state
    kind: str = DECODER  # DECODER, ENCODER (no KV cache) or ENCODER_DECODER
    architecture: str | None = None  # the transformers class counted (LlavaForConditional...)
    parts: tuple[tuple[str, int], ...] = ()  # parameters per part (vision tower, encoder...)
    learned_positions: bool | None = None  # a learned position-embedding table (GPT-2, BART)
    checkpoint: tuple[tuple[str, int], ...] = ()  # safetensors: (dtype, elements) as stored
    source: str = PARAMETER_COUNT
    counted_by: str = "given"
    fields_used: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def kv_layers(self) -> tuple[KvLayer, ...]:
        if self.kv:
            return self.kv
        if self.kind == ENCODER or None in (self.layers, self.kv_heads, self.head_dim):
            return ()
        return (KvLayer(kv_layout.FULL, 2 * self.kv_heads * self.head_dim, None, self.layers),)

    @property
    def state_elements(self) -> int:
        """Recurrent and convolution state elements per sequence (0: none)."""
        return sum(s.elements for s in self.state)

    @property
    def has_kv_shape(self) -> bool:
        return bool(self.kv_layers)

    @property
    def has_activation_shape(self) -> bool:
        return None not in (self.layers, self.hidden, self.heads)

    @property
    def kv_bytes_per_token_element(self) -> int | None:
        """K and V elements per token over all layers (before any window fills)."""
        layers = self.kv_layers
        return kv_layout.elements_per_token(layers) if layers else None

    def kv_elements(self, context: int) -> int | None:
        layers = self.kv_layers
        return kv_layout.elements(layers, context) if layers else None

    @property
    def quantizable_params(self) -> int | None:
        """The weight matrices of the linear layers: what 8/4-bit loaders pack.
        Embeddings, the output head, norms and biases stay 16-bit. Known only
        for a config (a plain count has no layout)."""
        if self.quantizable is not None:
            return self.quantizable
        if self.source != CONFIG or not self.layer_linears:
            return None
        return sum(lin.count * lin.in_features * lin.out_features for lin in self.layer_linears)

    def short_linear_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(lin.short for lin in self.layer_linears if not lin.expert))

    def lora_targets(self, modules: tuple[str, ...]) -> tuple[Linear, ...]:
        """The linears that LoRA module names select, PEFT style: a name matches
        the full module name or its last components ("c_proj" selects
        attn.c_proj and mlp.c_proj). 'all-linear' selects every linear inside
        the layers (not the output head, as in PEFT); routed experts' fused
        matrices are not nn.Linear modules and are never selected."""
        if not self.layer_linears:
            raise PlanError(
                "lora_modules",
                "LoRA adapter sizes need the layer shapes: give a config.json or a "
                "model name, or the layers, hidden size, heads and intermediate size "
                "with the parameter count",
            )
        candidates = tuple(lin for lin in self.layer_linears if not lin.expert)
        if tuple(modules) == ("all-linear",):
            return candidates
        chosen: list[Linear] = []
        for wanted in modules:
            hits = [lin for lin in candidates if lin.name == wanted or lin.name.endswith("." + wanted)]
            if not hits:
                raise PlanError(
                    "lora_modules",
                    f"{wanted!r} is not a linear layer of this model; choose from "
                    f"{', '.join(self.short_linear_names())} or all-linear",
                )
            for lin in hits:
                if lin not in chosen:
                    chosen.append(lin)
        return tuple(chosen)

    def lora_params(self, rank: int, modules: tuple[str, ...]) -> tuple[int, int]:
        """(adapter parameters, adapter tensors): r*(in+out) per targeted linear
        -- the A (r x in) and B (out x r) matrices of LoRA."""
        if rank <= 0:
            raise PlanError("lora_rank", "the LoRA rank must be a positive integer")
        targets = self.lora_targets(modules)
        params = sum(lin.count * rank * (lin.in_features + lin.out_features) for lin in targets)
        return params, sum(2 * lin.count for lin in targets)


# --- plain parameter count ---------------------------------------------------


def llama_linears(
    hidden, heads, kv_heads, head_dim, intermediate, qkv_bias, o_bias, mlp_bias=False, count=1
) -> tuple[Linear, ...]:
    return (
        Linear("self_attn.q_proj", hidden, heads * head_dim, qkv_bias, count),
        Linear("self_attn.k_proj", hidden, kv_heads * head_dim, qkv_bias, count),
        Linear("self_attn.v_proj", hidden, kv_heads * head_dim, qkv_bias, count),
        Linear("self_attn.o_proj", heads * head_dim, hidden, o_bias, count),
        Linear("mlp.gate_proj", hidden, intermediate, mlp_bias, count),
        Linear("mlp.up_proj", hidden, intermediate, mlp_bias, count),
        Linear("mlp.down_proj", intermediate, hidden, mlp_bias, count),
    )


def shape_from_params(
    params: int,
    *,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    intermediate: int | None = None,
    vocab: int | None = None,
) -> ModelShape:
    """A model known by its parameter count; layer figures optional."""
    if isinstance(params, bool) or not isinstance(params, int) or params <= 0:
        raise PlanError("params", "the parameter count must be a positive integer")
    for name, value in (
        ("layers", layers),
        ("hidden", hidden),
        ("heads", heads),
        ("kv_heads", kv_heads),
        ("head_dim", head_dim),
        ("intermediate", intermediate),
        ("shape", vocab),
    ):
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise PlanError(name, "must be a positive integer")
    notes = []
    if kv_heads is None and heads is not None:
        kv_heads = heads
        notes.append("KV heads not given: taken equal to the attention heads (no GQA)")
    if head_dim is None and hidden is not None and heads is not None:
        if hidden % heads:
            raise PlanError(
                "head_dim", f"hidden size {hidden} is not divisible by {heads} heads: give the head dimension"
            )
        head_dim = hidden // heads
        notes.append(f"head dim not given: hidden / heads = {head_dim}")
    if kv_heads is not None and heads is not None and heads % kv_heads:
        raise PlanError("kv_heads", f"{heads} attention heads cannot be grouped over {kv_heads} KV heads")
    linears: tuple[Linear, ...] = ()
    if None not in (layers, hidden, heads, kv_heads, head_dim, intermediate):
        linears = llama_linears(hidden, heads, kv_heads, head_dim, intermediate, False, False, count=layers)
        notes.append("layer modules assumed Llama-style (q/k/v/o_proj, gate/up/down_proj) for LoRA")
    return ModelShape(
        params=params,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=intermediate,
        vocab=vocab,
        layer_linears=linears,
        lora_default_modules=("q_proj", "v_proj") if linears else (),
        source=PARAMETER_COUNT,
        notes=tuple(notes),
    )
