"""Exact counts for any architecture transformers knows: the model is built
on PyTorch's meta device (shapes only, no memory, no weights downloaded)
and its parameters are counted, each shared tensor once (``named_parameters``
deduplicates, so tied input/output embeddings count once).

transformers is an optional extra (``vramscope[planner]``); without it an
unknown family gets a message naming the extra. Remote code (``auto_map``)
is never run: only the classes transformers ships are used.
See https://pytorch.org/docs/stable/meta.html and transformers'
``AutoModelForCausalLM.from_config``.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter

from vramscope.core.planner.config_source import EXTRA
from vramscope.core.planner.model_shape import CONFIG, ConfigNotUnderstood, Linear, ModelShape

_DROP = ("model_type", "quantization_config", "auto_map", "_name_or_path", "transformers_version")
_INDEX = re.compile(r"\.\d+(?=\.|$)")
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "moe_topk", "top_k", "num_selected_experts")


def transformers_version() -> str | None:
    try:
        import transformers
    except ImportError:
        return None
    return transformers.__version__


def meta_model(config: dict, model_type: str):
    """(transformers config, model on the meta device, whether it is a causal LM);
    ConfigNotUnderstood otherwise."""
    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM
    except ImportError:
        raise ConfigNotUnderstood(
            f"config.json has model_type {model_type!r}: counting it exactly needs "
            f"transformers ({EXTRA})") from None
    kwargs = {k: v for k, v in config.items() if k not in _DROP}
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        try:
            cfg = AutoConfig.for_model(model_type, **kwargs)
        except ValueError:
            raise ConfigNotUnderstood(
                f"config.json has model_type {model_type!r}, which transformers "
                f"{transformers.__version__} does not know (a newer transformers may)") from None
        except Exception as exc:  # a field of the wrong type, a missing sub-config...
            raise ConfigNotUnderstood(f"transformers cannot read this config.json: "
                                      f"{_first_line(exc)}") from None
        with torch.device("meta"), _quiet():
            try:
                model, causal = AutoModelForCausalLM.from_config(cfg), True
            except ValueError:  # not a causal LM (an encoder, an encoder-decoder)
                model, causal = AutoModel.from_config(cfg), False
    except ConfigNotUnderstood:
        raise
    except Exception as exc:
        raise ConfigNotUnderstood(f"transformers cannot build a {model_type} model from this "
                                  f"config.json: {_first_line(exc)}") from None
    finally:
        transformers.logging.set_verbosity(verbosity)
    return cfg, model, causal


@contextlib.contextmanager
def _quiet():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _pattern(name: str) -> str:
    """'model.layers.3.self_attn.q_proj' -> 'self_attn.q_proj' (per-layer module name)."""
    m = _INDEX.search(name)
    if m is None:
        return name
    return _INDEX.sub("", name[m.end() + 1:]) or name


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

    cfg, model, causal = meta_model(config, model_type)
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    named = list(model.named_parameters())  # each shared tensor once
    params = sum(p.numel() for _, p in named)
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

    layers, f_layers = _attr(text, "num_hidden_layers", "n_layer", "num_layers")
    hidden, f_hidden = _attr(text, "hidden_size", "n_embd", "d_model")
    heads, f_heads = _attr(text, "num_attention_heads", "n_head", "num_heads")
    kv_heads, f_kv = _attr(text, "num_key_value_heads", "num_kv_heads", "n_head_kv")
    if getattr(text, "multi_query", False) and not getattr(text, "new_decoder_architecture", False):
        kv_heads, f_kv = 1, "multi_query"
    if kv_heads is None:
        kv_heads = heads
    if not causal:  # the planner's KV cache is a decoder's
        kv_heads, f_kv = None, None
    head_dim, f_head_dim = _attr(text, "head_dim")
    if head_dim is None and hidden and heads:
        head_dim = hidden // heads
    intermediate, f_inter = _attr(text, "intermediate_size", "ffn_dim", "n_inner")
    vocab, f_vocab = _attr(text, "vocab_size")
    used = [f"model_type={model_type}"] + [
        f"{f}={v}" for f, v in ((f_layers, layers), (f_hidden, hidden), (f_heads, heads),
                                (f_kv, kv_heads), (f_head_dim, head_dim), (f_inter, intermediate),
                                (f_vocab, vocab)) if f]
    notes = [] if causal else [f"{model_type} is not a causal language model in transformers "
                               "(built with AutoModel): weights and training are planned, the "
                               "KV cache is not"]
    experts = None
    active = active_mlp = None
    n_experts, f_e = _attr(text, *_EXPERTS)
    top_k, f_k = _attr(text, *_TOP_K)
    expert_params = sum(lin.count * lin.in_features * lin.out_features
                        + (lin.count * lin.out_features if lin.bias else 0)
                        for lin in linears if lin.expert)
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
            notes.append(f"mixture of experts: all {n_experts} routed experts are held in "
                         f"memory ({params:,} parameters); {top_k} per token are used, "
                         f"{active:,} active parameters")
        else:
            notes.append("mixture of experts: all experts are held in memory; the active "
                         "count is unknown (no experts-per-token field)")
    return ModelShape(
        params=params, tensors=len(named), layers=layers, hidden=hidden, heads=heads,
        kv_heads=kv_heads, head_dim=head_dim, intermediate=intermediate, vocab=vocab,
        tied_embeddings=tied, model_type=model_type, layer_linears=linears,
        active_params=active, experts=experts, active_mlp=active_mlp,
        quantizable=quantizable, source=CONFIG,
        counted_by=f"transformers {transformers.__version__} on the meta device",
        fields_used=tuple(used), notes=tuple(notes)), text.to_dict()
