"""Real published config.json files -> exact parameter and KV figures; refusals."""

from __future__ import annotations

import pytest
from planner_configs import config

from vramscope.core.planner import (
    ConfigNotUnderstood,
    PlanError,
    PlanRequest,
    build_plan,
    shape_from_config,
    shape_from_params,
)
from vramscope.core.planner.inference import kv_bytes_per_token


def test_llama_2_7b_parameter_count():
    s = shape_from_config(config("llama-2-7b"))
    # per layer: q,k,v,o 4*4096^2 + MLP 3*4096*11008 + 2 RMSNorm 2*4096
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert layer == 202_383_360
    expected = 32 * layer + 2 * 32000 * 4096 + 4096  # untied embed + lm_head, final norm
    assert s.params == expected == 6_738_415_616
    assert s.tensors == 32 * 9 + 3
    assert (s.layers, s.heads, s.kv_heads, s.head_dim) == (32, 32, 32, 128)
    assert "tie_word_embeddings=false" in s.fields_used
    assert "num_key_value_heads=32" in s.fields_used


def test_mistral_7b_gqa_parameter_count_and_kv():
    s = shape_from_config(config("mistral-7b-v0.1"))
    # GQA: k and v project to 8 heads * 128 = 1024
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert s.params == 32 * layer + 2 * 32000 * 4096 + 4096 == 7_241_732_096
    assert (s.kv_heads, s.head_dim) == (8, 128)
    # 2 * 32 layers * 8 KV heads * 128 * 2 bytes: a quarter of Llama-2-7B's 524,288
    assert kv_bytes_per_token(s, "bf16") == 131_072
    assert "sliding_window=4096" in s.fields_used
    assert [(k.kind, k.window, k.count) for k in s.kv_layers] == [("sliding window", 4096, 32)]


def test_gpt2_small_tied_parameter_count():
    s = shape_from_config(config("gpt2"))
    h, inner = 768, 4 * 768
    layer = (2 * h) + (h * 3 * h + 3 * h) + (h * h + h) + (2 * h) + (h * inner + inner) + (inner * h + h)
    assert layer == 7_087_872
    expected = 50257 * h + 1024 * h + 12 * layer + 2 * h  # wte, wpe, blocks, ln_f; lm_head tied
    assert s.params == expected == 124_439_808
    assert s.tied_embeddings is True
    assert "n_positions=1024" in s.fields_used and "n_embd=768" in s.fields_used
    assert any("n_inner absent" in n for n in s.notes)
    assert kv_bytes_per_token(s, "fp32") == 2 * 12 * 12 * 64 * 4


def test_qwen2_0_5b_tied_gqa_qkv_biases():
    s = shape_from_config(config("qwen2-0.5b"))
    h, kv = 896, 2 * 64
    attn = (h * h + h) + 2 * (h * kv + kv) + h * h  # q,k,v with bias; o_proj without
    layer = attn + 3 * h * 4864 + 2 * h
    assert layer == 14_912_384
    assert s.params == 24 * layer + 151936 * h + h == 494_032_768
    assert (s.heads, s.kv_heads, s.head_dim) == (14, 2, 64)
    assert s.tied_embeddings is True


def test_gemma_7b_explicit_head_dim_is_honoured():
    s = shape_from_config(config("gemma-7b"))
    # head_dim 256 with 16 heads: q projects 3072 -> 4096, not hidden/heads = 192
    assert s.head_dim == 256 and 3072 // 16 == 192
    layer = 4 * 3072 * 4096 + 3 * 3072 * 24576 + 2 * 3072
    assert s.params == 28 * layer + 256000 * 3072 + 3072 == 8_537_680_896  # tied
    assert "head_dim=256" in s.fields_used
    assert kv_bytes_per_token(s, "bf16") == 2 * 28 * 16 * 256 * 2


def test_plan_from_config_uses_the_exact_count():
    s = shape_from_config(config("llama-2-7b"))
    plan = build_plan(PlanRequest(shape=s, mode="infer", precision="bf16", context=4096))
    assert plan.bucket_dict()["weights"] == 2 * 6_738_415_616
    assert plan.bucket_dict()["kv_cache"] == 524_288 * 4096
    assert plan.to_json()["model"]["fields_used"][0] == "model_type=llama"


@pytest.mark.parametrize(
    "cfg, words",
    [
        ({"model_type": "llama", "num_hidden_layers": 2}, "no 'hidden_size'"),
        ({"model_type": "no_such_family", "hidden_size": 4096}, "does not know"),
        ({"hidden_size": 4096, "num_hidden_layers": 32}, "no model_type"),
        (
            {k: v for k, v in config("llama-2-7b").items() if k != "intermediate_size"},
            "no 'intermediate_size'",
        ),
        ({**config("llama-2-7b"), "num_hidden_layers": "32"}, "should be an integer"),
        ({**config("llama-2-7b"), "num_key_value_heads": 5}, "not a multiple"),
        ([1, 2], "JSON object"),
    ],
)
def test_configs_not_understood_are_refused_clearly(cfg, words):
    with pytest.raises(ConfigNotUnderstood) as exc:
        shape_from_config(cfg)
    assert words in str(exc.value)
    assert "config.json" in str(exc.value)
    assert exc.value.field == "config"


def test_architectures_entry_stands_in_for_a_missing_model_type():
    cfg = {k: v for k, v in config("llama-2-7b").items() if k != "model_type"}
    assert shape_from_config(cfg).params == 6_738_415_616


# --- LoRA ---------------------------------------------------------------------------


def test_lora_adapter_size_from_the_shapes():
    s = shape_from_config(config("llama-2-7b"))
    params, tensors = s.lora_params(8, ("q_proj", "v_proj"))
    assert params == 32 * (8 * (4096 + 4096) + 8 * (4096 + 4096)) == 4_194_304
    assert tensors == 32 * 4
    gqa = shape_from_config(config("mistral-7b-v0.1"))
    assert gqa.lora_params(8, ("v_proj",))[0] == 32 * 8 * (4096 + 1024)
    gpt2 = shape_from_config(config("gpt2"))
    # "c_proj" selects attn.c_proj and mlp.c_proj, as PEFT's suffix match does
    assert gpt2.lora_params(4, ("c_proj",))[0] == 12 * 4 * ((768 + 768) + (3072 + 768))


def test_lora_removes_gradients_and_optimizer_state_of_frozen_weights():
    s = shape_from_config(config("llama-2-7b"))
    full = build_plan(PlanRequest(shape=s, mode="train", precision="mixed"))
    lora = build_plan(PlanRequest(shape=s, mode="train", precision="mixed", lora_rank=8))
    adapters = 4_194_304
    b = lora.bucket_dict()
    assert b["weights"] == 2 * s.params + 2 * adapters  # frozen bf16 base + adapters
    assert b["gradients"] == 2 * adapters  # none for the frozen weights
    assert b["master_weights"] == 4 * adapters
    assert b["optimizer_state"] == 8 * adapters
    # "Where full fine-tuning of 7B needed 112 GB, LoRA needs 14 GB plus change"
    assert full.per_gpu_total == 16 * s.params
    assert lora.per_gpu_total == 2 * s.params + 16 * adapters


def test_lora_unknown_module_is_refused_with_the_choices():
    s = shape_from_config(config("llama-2-7b"))
    with pytest.raises(ValueError, match="choose from q_proj, k_proj"):
        build_plan(PlanRequest(shape=s, mode="train", lora_rank=8, lora_modules=("qkv",)))


def test_lora_without_shapes_asks_for_a_config():
    with pytest.raises(PlanError, match="config.json or a model name") as exc:
        build_plan(PlanRequest(shape=shape_from_params(7 * 10**9), mode="train", lora_rank=8))
    assert exc.value.field == "lora_modules"


def test_qlora_style_int4_base_with_adapters():
    s = shape_from_config(config("llama-2-7b"))
    plan = build_plan(PlanRequest(shape=s, mode="train", precision="int4", lora_rank=8))
    b = plan.bucket_dict()
    assert b["weights"] == s.params // 2 + 2 * 4_194_304
    assert b["gradients"] == 2 * 4_194_304
    # embeddings + lm_head stay 16-bit: metadata includes that, stated
    assert "16-bit" in plan.explanation("quantization_metadata")
    with pytest.raises(PlanError, match="give a LoRA rank") as exc:
        build_plan(PlanRequest(shape=s, mode="train", precision="int4"))
    assert exc.value.field == "precision" and "--" not in exc.value.message
