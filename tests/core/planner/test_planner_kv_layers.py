"""The KV cache layer type by layer type: sliding windows, MLA latents,
multi-query attention, shared caches -- against the published configs."""

from __future__ import annotations

import pytest
from planner_configs import config

from vramscope.core.planner import PlanRequest, build_plan, shape_from_config, shape_from_params
from vramscope.core.planner import inference, kv_layout

pytest.importorskip("transformers", reason="these families are counted on the meta device")


def kv(name, context, dtype="bf16"):
    return inference.kv_conversation_bytes(shape_from_config(config(name)), dtype, context)


def test_gemma2_alternating_sliding_layers_hold_a_window_not_the_context():
    per_layer_token = 2 * 8 * 256 * 2  # K and V, 8 KV heads, head_dim 256, bf16
    expected = 21 * per_layer_token * 4096 + 21 * per_layer_token * 8192
    assert kv("gemma-2-9b", 8192) == expected
    # what a plain count with every layer full would say: a third more
    assert 42 * per_layer_token * 8192 / expected == pytest.approx(4 / 3)
    assert kv("gemma-2-9b", 4096) == 42 * per_layer_token * 4096  # no window filled yet


def test_gemma3_five_sliding_layers_in_six():
    shape = shape_from_config(config("gemma-3-1b"))
    kinds = {(k.kind, k.window): k.count for k in shape.kv_layers}
    assert kinds == {(kv_layout.SLIDING, 512): 22, (kv_layout.FULL, None): 4}
    per_layer_token = 2 * 1 * 256 * 2  # one KV head (MQA)
    assert kv("gemma-3-1b", 32768) == 4 * per_layer_token * 32768 + 22 * per_layer_token * 512


def test_mistral_slides_every_layer_and_qwen25_does_not():
    assert kv("mistral-7b-v0.1", 32768) == 32 * 2 * 8 * 128 * 2 * 4096
    # Qwen2.5 publishes sliding_window but use_sliding_window false: all full
    assert kv("qwen2.5-7b", 32768) == 28 * 2 * 4 * 128 * 2 * 32768


def test_mla_caches_the_latent_as_serving_engines_do_and_notes_the_decompressed_size():
    shape = shape_from_config(config("deepseek-v2-lite"))
    assert kv("deepseek-v2-lite", 4096) == 27 * (512 + 64) * 2 * 4096
    assert shape.kv_decompressed == 27 * 16 * (128 + 64 + 128)
    plan = build_plan(PlanRequest(shape=shape, mode="infer", precision="bf16", context=4096))
    assert plan.bucket_dict()["kv_cache"] == 27 * 576 * 2 * 4096
    assert any("decompressed" in n for n in plan.notes + shape.notes)
    # DeepSeek-V3: 61 layers of 576, 71× less than decompressed K/V
    v3 = shape_from_config(config("deepseek-v3"))
    assert v3.kv_bytes_per_token_element == 61 * 576
    assert v3.kv_decompressed / v3.kv_bytes_per_token_element == pytest.approx(71.1, abs=0.1)


def test_falcon_multi_query_caches_one_kv_head():
    shape = shape_from_config(config("falcon-7b"))
    assert shape.kv_heads == 1 and shape.head_dim == 64
    assert kv("falcon-7b", 2048) == 32 * 2 * 1 * 64 * 2 * 2048


def test_layers_sharing_a_cache_add_nothing_and_per_layer_windows_are_honoured():
    cfg = {
        "num_kv_shared_layers": 2,
        "sliding_window": [None, 128, None, 64],
        "layer_types": ["full_attention", "sliding_attention", "full_attention", "sliding_attention"],
    }
    layers, _, notes = kv_layout.kv_layers(cfg, model_type="x", layers=4, heads=4, kv_heads=2, head_dim=8)
    assert kv_layout.elements(layers, 1000) == 1000 * 32 + 128 * 32 + 0 + 0
    assert any("reuse" in n for n in notes)


def test_longest_context_that_fits_inverts_the_windowed_cache():
    shape = shape_from_config(config("gemma-2-9b"))
    headroom = 10 * 2**30
    longest = inference.longest_context_that_fits(shape, "bf16", headroom)
    assert inference.kv_conversation_bytes(shape, "bf16", longest) <= headroom
    assert inference.kv_conversation_bytes(shape, "bf16", longest + 1) > headroom


def test_a_count_with_layer_figures_keeps_the_uniform_formula():
    shape = shape_from_params(7 * 10**9, layers=32, hidden=4096, heads=32, kv_heads=8)
    assert inference.kv_conversation_bytes(shape, "fp16", 1000) == 2 * 32 * 8 * 128 * 2 * 1000
