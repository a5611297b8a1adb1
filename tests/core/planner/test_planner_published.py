"""Published configs (tests/core/planner/configs) counted exactly.

Each config.json is the one its model card publishes; the expected counts
are the published parameter counts (model cards; where a card rounds, the
rounded figure it gives is checked too). Families covered by hand formulas
are also checked against transformers' own model built on the meta device,
tensor for tensor.
"""

from __future__ import annotations

import pytest
from planner_configs import config

from vramscope.core.planner import PlanRequest, build_plan, shape_from_config
from vramscope.core.planner.hand_counts import HAND_FAMILIES

pytest.importorskip("transformers", reason="the meta-device counts need transformers")

from vramscope.core.planner.meta_count import meta_shape  # noqa: E402

# name: (family, exact parameters, the model card's rounded figure in billions, note)
PUBLISHED = {
    "llama-2-7b": ("llama", 6_738_415_616, 6.7, "dense, untied, MHA"),
    "llama-3.2-1b": ("llama", 1_235_814_400, 1.23, "tied embeddings, GQA"),
    "llama-3.1-70b": ("llama", 70_553_706_496, 70.6, "GQA 8 KV heads"),
    "mistral-7b-v0.1": ("mistral", 7_241_732_096, 7.24, "sliding window 4,096"),
    "qwen2-0.5b": ("qwen2", 494_032_768, 0.49, "q/k/v biases, tied"),
    "qwen2.5-7b": ("qwen2", 7_615_616_512, 7.61, "q/k/v biases, untied"),
    "qwen3-0.6b": ("qwen3", 596_049_920, 0.6, "q/k norms, tied"),
    "gemma-7b": ("gemma", 8_537_680_896, 8.54, "head_dim 256, tied"),
    "gemma-2-9b": ("gemma2", 9_241_705_984, 9.24, "alternating sliding window"),
    "gemma-3-1b": ("gemma3_text", 999_885_952, 1.0, "5 of 6 layers sliding, MQA"),
    "gpt2": ("gpt2", 124_439_808, 0.124, "learned positions, Conv1D with biases"),
    "opt-125m": ("opt", 125_239_296, 0.125, "biases everywhere, tied"),
    "falcon-7b": ("falcon", 6_921_720_704, 6.92, "multi-query attention, fused qkv"),
    "phi-3-mini-4k": ("phi3", 3_821_079_552, 3.8, "fused qkv and gate/up"),
    "mixtral-8x7b-v0.1": ("mixtral", 46_702_792_704, 46.7, "MoE 8 experts, 2 per token"),
    "qwen1.5-moe-a2.7b": ("qwen2_moe", 14_315_784_192, 14.3, "MoE 60 + shared expert"),
    "deepseek-v2-lite": ("deepseek_v2", 15_706_484_224, 15.7, "MLA, MoE 64 + 2 shared"),
    # DeepSeek-V3's card says 671B for the main model; its 685B adds the 14B
    # multi-token-prediction module, which transformers does not build.
    "deepseek-v3": ("deepseek_v3", 671_026_404_352, 671, "MLA, MoE 256 + 1, fp8"),
}
# Active parameters per token the cards publish (DeepSeek-V2-Lite's 2.4B leaves
# out the 0.21B input embedding: 2.66B - 0.21B = 2.45B).
ACTIVE = {
    "mixtral-8x7b-v0.1": (12_879_925_248, 12.9),
    "qwen1.5-moe-a2.7b": (2_689_173_504, 2.7),
    "deepseek-v2-lite": (2_661_150_208, 2.66),
    "deepseek-v3": (37_552_282_624, 37.6),
}


def test_the_collection_spans_the_families_people_plan_today():
    assert len(PUBLISHED) >= 15
    assert len({family for family, *_ in PUBLISHED.values()}) >= 10
    for name, (family, *_rest) in PUBLISHED.items():
        assert config(name)["model_type"] == family


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_parameter_count_exactly(name):
    family, exact, rounded, _ = PUBLISHED[name]
    shape = shape_from_config(config(name))
    assert shape.params == exact
    assert exact / 1e9 == pytest.approx(rounded, rel=0.01)  # the card rounds
    path = "hand formula" if family in HAND_FAMILIES else "on the meta device"
    assert path in shape.counted_by


@pytest.mark.parametrize("name", sorted(n for n, v in PUBLISHED.items() if v[0] in HAND_FAMILIES))
def test_hand_formulas_agree_with_the_meta_device_tensor_for_tensor(name):
    cfg = config(name)
    hand = shape_from_config(cfg)
    meta, _ = meta_shape(cfg, cfg["model_type"])
    assert (hand.params, hand.tensors) == (meta.params, meta.tensors)
    assert hand.tied_embeddings == meta.tied_embeddings
    # the same linear matrices, so LoRA and quantisation agree too
    assert hand.quantizable_params == meta.quantizable_params
    assert hand.lora_params(16, hand.lora_default_modules) == meta.lora_params(16, hand.lora_default_modules)


@pytest.mark.parametrize("name", sorted(ACTIVE))
def test_mixture_of_experts_holds_every_expert_and_names_the_active_ones(name):
    shape = shape_from_config(config(name))
    active, rounded = ACTIVE[name]
    assert shape.active_params == active
    assert active / 1e9 == pytest.approx(rounded, rel=0.01)
    plan = build_plan(PlanRequest(shape=shape, mode="infer", precision="bf16", context=1024))
    assert plan.bucket_dict()["weights"] == 2 * shape.params  # all experts in memory
    assert any("active per token" in n for n in plan.notes)
    assert plan.to_json()["model"]["active_params"] == active


def test_gemma2_without_model_type_is_not_counted_as_gemma():
    cfg = {k: v for k, v in config("gemma-2-9b").items() if k != "model_type"}
    shape = shape_from_config(cfg)
    assert shape.model_type == "gemma2" and shape.params == 9_241_705_984


def test_training_and_zero3_plans_use_the_exact_count():
    shape = shape_from_config(config("llama-3.1-70b"))
    plan = build_plan(PlanRequest(shape=shape, mode="train", zero_stage=3, gpus=8))
    per_gpu = plan.bucket_dict()
    assert per_gpu["weights"] == -(-2 * 70_553_706_496 // 8)
    assert per_gpu["optimizer_state"] == 8 * 70_553_706_496 // 8


def test_moe_activations_follow_the_experts_a_token_passes_through():
    shape = shape_from_config(config("mixtral-8x7b-v0.1"))
    assert shape.active_mlp == 2 * 14336
    plan = build_plan(PlanRequest(shape=shape, mode="train", batch=1, seq=1024, flash_attention=True))
    s, b, h = 1024, 1, 4096
    assert plan.bucket_dict()["activations"] == 32 * (18 * s * b * h + 4 * s * b * 2 * 14336)
    assert "mixture of experts" in plan.explanation("activations")
    deepseek = shape_from_config(config("deepseek-v2-lite"))
    assert deepseek.active_mlp == 6 * 1408 + 2 * 1408  # 6 routed + 2 shared experts
    qwen = shape_from_config(config("qwen1.5-moe-a2.7b"))
    assert qwen.active_mlp == 4 * 1408 + 5632  # 4 routed + the shared expert
