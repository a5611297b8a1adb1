"""The context limit under RoPE scaling, the warning past it, and the default context."""

from __future__ import annotations

from planner_configs import config

from vramscope.core.planner import PlanRequest, build_plan, shape_from_config


def infer(cfg, context=None):
    return build_plan(PlanRequest(shape=shape_from_config(cfg), mode="infer", context=context))


def test_yarn_stretches_the_trained_length_by_its_factor():
    # Qwen2.5's model card: rope_scaling yarn, factor 4, original 32768 -> 131,072 tokens
    cfg = {
        **config("qwen2.5-7b"),
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    }
    shape = shape_from_config(cfg)
    assert shape.max_positions == 131_072
    assert not infer(cfg, context=131_072).warnings


def test_dynamic_ntk_without_an_original_length_stretches_max_position_embeddings():
    cfg = {**config("llama-2-7b"), "rope_scaling": {"type": "dynamic", "factor": 2.0}}
    assert shape_from_config(cfg).max_positions == 8192


def test_llama3_scaling_keeps_the_extended_max_position_embeddings():
    shape = shape_from_config(config("llama-3.1-70b"))
    assert shape.max_positions == 131_072


def test_a_rope_model_past_its_limit_is_not_told_about_learned_position_embeddings():
    warning = infer(config("llama-2-7b"), context=16384).warnings[0]
    assert "4,096" in warning and "learned position" not in warning
    learned = infer(config("gpt2"), context=4096).warnings[0]
    assert "learned position embeddings have no entry" in learned


def test_a_million_token_limit_is_not_the_default_context():
    cfg = {**config("qwen2.5-7b"), "max_position_embeddings": 1_024_000}
    plan = infer(cfg)
    assert plan.context == 131_072
    assert any("the model allows 1,024,000" in n for n in plan.notes)
    assert infer(cfg, context=1_024_000).context == 1_024_000  # asked for: planned
