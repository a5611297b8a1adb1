"""Quantised checkpoints (quantization_config) and LoRA targets per model type."""

from __future__ import annotations

import math

import pytest
from planner_configs import config

from vramscope.core.planner import PlanError, PlanRequest, build_plan, shape_from_config

LLAMA2_MATRICES = [(4096, 4096)] * 4 + [(4096, 11008)] * 2 + [(11008, 4096)]  # (in, out)
LLAMA2 = 6_738_415_616
LLAMA2_LINEAR = 32 * sum(i * o for i, o in LLAMA2_MATRICES)


def served(cfg, **kw):
    plan = build_plan(PlanRequest(shape=shape_from_config(cfg), mode="infer", context=1, **kw))
    b = plan.bucket_dict()
    return plan, b["weights"] + b.get("quantization_metadata", 0)


def test_gptq_group_128_packs_4_bits_with_zeros_scales_and_group_index():
    q = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
    plan, total = served({**config("llama-2-7b"), "quantization_config": q})
    per_layer = sum(
        i * o // 2 + math.ceil(i / 128) * o // 2 + math.ceil(i / 128) * o * 2 + 4 * i
        for i, o in LLAMA2_MATRICES
    )
    assert total == 32 * per_layer + 2 * (LLAMA2 - LLAMA2_LINEAR)
    assert plan.bucket_dict()["weights"] == LLAMA2 // 2  # Ψ × 0.5 B, the rest stated apart
    assert "GPTQ 4-bit, group 128" in plan.layout


def test_awq_has_no_group_index():
    q = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    _, total = served({**config("llama-2-7b"), "quantization_config": q})
    per_layer = sum(i * o // 2 + (i // 128) * o // 2 + (i // 128) * o * 2 for i, o in LLAMA2_MATRICES)
    assert total == 32 * per_layer + 2 * (LLAMA2 - LLAMA2_LINEAR)


def test_bitsandbytes_4bit_double_quant_and_8bit_row_scales():
    q4 = {
        "quant_method": "bitsandbytes",
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
    }
    _, total = served({**config("llama-2-7b"), "quantization_config": q4})
    blocks = [i * o // 64 for i, o in LLAMA2_MATRICES]
    per_layer = sum(i * o // 2 for i, o in LLAMA2_MATRICES) + sum(b + 4 * math.ceil(b / 256) for b in blocks)
    assert total == 32 * per_layer + 2 * (LLAMA2 - LLAMA2_LINEAR)
    q8 = {"quant_method": "bitsandbytes", "load_in_8bit": True}
    _, total8 = served({**config("llama-2-7b"), "quantization_config": q8})
    assert total8 == 32 * sum(i * o + 4 * o for i, o in LLAMA2_MATRICES) + 2 * (LLAMA2 - LLAMA2_LINEAR)


def test_fp8_block_scales():
    q = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
    _, total = served({**config("llama-2-7b"), "quantization_config": q})
    per_layer = sum(i * o + 4 * math.ceil(o / 128) * math.ceil(i / 128) for i, o in LLAMA2_MATRICES)
    assert total == 32 * per_layer + 2 * (LLAMA2 - LLAMA2_LINEAR)


def test_asking_for_a_precision_overrides_the_config_and_says_so():
    q = {"quant_method": "gptq", "bits": 4, "group_size": 128}
    plan, total = served({**config("llama-2-7b"), "quantization_config": q}, precision="bf16")
    assert total == 2 * LLAMA2
    assert any("planned at bf16 as asked" in n for n in plan.notes)


@pytest.mark.parametrize(
    "q",
    [
        {"quant_method": "hqq"},
        {"quant_method": "compressed-tensors", "format": "pack-quantized"},
        {"_load_in_8bit": False, "_load_in_4bit": False, "quant_method": "bitsandbytes"},
    ],
)
def test_a_format_the_planner_cannot_size_still_gets_a_plan_that_says_so(q):
    shape = shape_from_config({**config("llama-2-7b"), "quantization_config": q})
    plan, total = served({**config("llama-2-7b"), "quantization_config": q})
    assert total == 2 * LLAMA2  # 16-bit: the upper bound, said
    assert any("not sized" in n and "upper bound" in n for n in plan.notes)
    assert not shape.quantization.sized
    asked, _ = served({**config("llama-2-7b"), "quantization_config": q}, precision="int8")
    assert asked.bucket_dict()["weights"] == LLAMA2  # --precision honoured, 1 B per weight


def test_bitsandbytes_private_keys_are_read():
    q = {"_load_in_4bit": True, "_load_in_8bit": False, "quant_method": "bitsandbytes"}
    shape = shape_from_config({**config("llama-2-7b"), "quantization_config": q})
    assert shape.quantization.method == "bnb-4bit"


def test_qlora_on_a_gptq_checkpoint_keeps_the_base_packed():
    q = {"quant_method": "gptq", "bits": 4, "group_size": 128}
    shape = shape_from_config({**config("llama-2-7b"), "quantization_config": q})
    plan = build_plan(PlanRequest(shape=shape, mode="train", lora_rank=8))
    b = plan.bucket_dict()
    adapters = 32 * 8 * 2 * (4096 + 4096)
    assert b["weights"] == LLAMA2 // 2 + 2 * adapters
    assert b["gradients"] == 2 * adapters and "quantization_metadata" in b


# --- LoRA targets --------------------------------------------------------------------

transformers = pytest.importorskip("transformers", reason="meta-device families")


def test_falcon_lora_defaults_to_its_fused_query_key_value():
    shape = shape_from_config(config("falcon-7b"))
    assert shape.lora_default_modules == ("query_key_value",)
    plan = build_plan(PlanRequest(shape=shape, mode="train", lora_rank=16))
    adapters = 32 * 16 * (4544 + 4544 + 2 * 64)  # fused q (71 heads) + one k + one v head
    assert plan.bucket_dict()["gradients"] == 2 * adapters
    assert "query_key_value" in plan.layout


def test_phi3_targets_qkv_proj_and_an_override_is_honoured():
    shape = shape_from_config(config("phi-3-mini-4k"))
    assert shape.lora_default_modules == ("qkv_proj",)
    assert shape.lora_params(8, ("qkv_proj",))[0] == 32 * 8 * (3072 + 9216)
    assert shape.lora_params(8, ("o_proj", "down_proj"))[0] == 32 * 8 * ((3072 + 3072) + (8192 + 3072))
    with pytest.raises(PlanError, match="qkv_proj") as exc:
        shape.lora_params(8, ("q_proj",))  # Phi-3 has no separate q_proj
    assert exc.value.field == "lora_modules"


def test_a_family_peft_has_no_default_for_says_what_was_assumed():
    shape = shape_from_config(config("deepseek-v2-lite"))
    assert "kv_b_proj" in shape.lora_default_modules
    assert any("PEFT names no LoRA default for deepseek_v2" in n for n in shape.notes)


def test_routed_experts_are_not_lora_targets_but_are_quantised():
    shape = shape_from_config(config("mixtral-8x7b-v0.1"))
    all_linear = shape.lora_targets(("all-linear",))
    assert not any(lin.expert for lin in all_linear)
    experts = sum(lin.count * lin.in_features * lin.out_features for lin in shape.layer_linears if lin.expert)
    assert experts == 32 * 8 * 3 * 4096 * 14336
    assert shape.quantizable_params > experts
