"""State-space, hybrid, encoder-decoder, multimodal and encoder models, and
MXFP4 checkpoints: the whole checkpoint counted (checked against the class
transformers builds on the meta device), the KV cache only where attention
caches, the recurrent state per sequence -- each figure derived by hand."""

from __future__ import annotations

import json

import pytest
from planner_configs import CONFIGS, config

from vramscope.cli import main
from vramscope.core.planner import PlanRequest, build_plan, shape_from_config
from vramscope.core.units import GiB

pytest.importorskip("transformers")


def served(name, context=4096, concurrency=1, **kw):
    shape = shape_from_config(config(name))
    return shape, build_plan(
        PlanRequest(shape=shape, mode="infer", context=context, concurrency=concurrency, **kw)
    )


def meta_count(name: str) -> int:
    """Parameters of the config's ``architectures`` class, built by transformers on the
    meta device (each shared tensor once): what the checkpoint holds."""
    import torch
    import transformers

    cfg = transformers.AutoConfig.for_model(
        **{k: v for k, v in config(name).items() if k != "quantization_config"}
    )
    cls = getattr(transformers, config(name)["architectures"][0])
    with torch.device("meta"):
        model = cls._from_config(cfg)
    return sum(p.numel() for p in model.parameters())


# (config, parameters as transformers' own class holds them; published where known)
WHOLE = [
    ("mamba-codestral-7b", 7_285_403_648),
    ("bamba-9b", 9_780_235_392),
    ("jamba-v0.1", 51_570_323_328),
    ("falcon-h1-0.5b", 521_411_104),
    ("qwen3-next-80b-a3b", 79_674_391_296),
    ("bart-large", 406_291_456),
    ("t5-small", 60_506_624),
    ("llava-1.5-7b", 7_063_427_072),
    ("gemma-3-4b-it", 4_300_079_472),
    ("qwen2-vl-2b", 2_208_985_600),
    ("llama-4-scout-17b-16e", 108_641_793_536),
    ("bert-base-uncased", 109_514_298),
    ("gpt-oss-20b", 20_914_757_184),
]


@pytest.mark.parametrize(("name", "params"), WHOLE)
def test_every_part_of_the_checkpoint_is_counted(name, params):
    shape = shape_from_config(config(name))
    assert shape.params == params == meta_count(name)
    assert shape.architecture == config(name)["architectures"][0]


def test_a_pure_mamba2_model_has_no_kv_cache_only_a_state_per_sequence():
    shape, plan = served("mamba-codestral-7b", context=4096)
    inner, groups, d_state, conv, heads, head_dim = 2 * 4096, 8, 128, 4, 128, 64
    per_layer = (inner + 2 * groups * d_state) * conv + heads * head_dim * d_state
    state = 64 * per_layer * 2  # bf16
    assert state == 139_460_608  # ~140 MB, not 2 MiB per token
    b = plan.bucket_dict()
    assert "kv_cache" not in b and b["recurrent_state"] == state
    assert shape.heads is None  # Mamba-2's 128 SSM heads are not attention heads
    _, long = served("mamba-codestral-7b", context=1_000_000)
    assert long.bucket_dict() == b  # the state does not grow with the context
    _, on_24 = served("mamba-codestral-7b", gpus_memory=(("24 GiB", 24 * GiB),))
    assert on_24.gpus[0].fits


def test_bamba_caches_kv_on_its_three_attention_layers_and_state_on_the_rest():
    shape, plan = served("bamba-9b", context=4096, concurrency=2)
    assert [(k.kind, k.count) for k in shape.kv_layers if k.elements] == [("full attention", 3)]
    assert plan.kv_bytes_per_token == 3 * 2 * 8 * 128 * 2
    per_layer = (8192 + 2 * 1 * 128) * 4 + 128 * 64 * 128
    b = plan.bucket_dict()
    assert b["recurrent_state"] == 2 * 29 * per_layer * 2
    assert b["kv_cache"] == 2 * 4096 * 3 * 2 * 8 * 128 * 2


def test_jamba_reads_its_attention_period_and_offset():
    shape, plan = served("jamba-v0.1", context=8192)
    # attn_layer_period 8, offset 4: layers 4, 12, 20, 28 attend; 28 Mamba layers
    assert plan.kv_bytes_per_token == 4 * 2 * 8 * 128 * 2
    assert plan.bucket_dict()["recurrent_state"] == 28 * (8192 * 4 + 8192 * 16) * 2
    assert any("28 × Mamba" in n for n in shape.notes)


def test_falcon_h1_layers_hold_both_kv_and_state():
    shape, plan = served("falcon-h1-0.5b", context=16384)
    assert plan.kv_bytes_per_token == 36 * 2 * 2 * 64 * 2
    assert plan.bucket_dict()["recurrent_state"] == 36 * ((1536 + 2 * 128) * 4 + 24 * 64 * 128) * 2


def test_qwen3_next_caches_only_every_fourth_layer():
    shape, plan = served("qwen3-next-80b-a3b", context=32768)
    assert plan.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2
    conv = (2 * 16 * 128 + 32 * 128) * 4
    assert plan.bucket_dict()["recurrent_state"] == 36 * (conv + 32 * 128 * 128) * 2
    assert shape.experts == (512, 10)


def test_bart_plans_decoder_self_attention_and_cross_attention_over_the_source():
    shape, plan = served("bart-large", context=1024)
    assert dict(shape.parts)["encoder"] == 152_207_360  # not the decoder alone
    assert shape.layers == 24  # activations: 12 encoder + 12 decoder layers
    per_layer = 2 * 16 * 64 * 2  # K and V of 16 heads of 64, bf16
    assert plan.kv_bytes_per_token == 2 * 12 * per_layer  # self + cross, 12 decoder layers
    assert plan.bucket_dict()["kv_cache"] == 1024 * 2 * 12 * per_layer
    assert not plan.warnings


def test_t5_uses_d_kv_and_plans_the_context_asked(capsys):
    rc = main(
        [
            "plan",
            "--config",
            str(CONFIGS / "t5-small.json"),
            "--mode",
            "infer",
            "--context",
            "512",
            "--gpu-memory",
            "8GiB",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["context"] == 512
    assert data["kv_bytes_per_token"] == 2 * 6 * 2 * 8 * 64 * 2
    assert data["buckets"]["kv_cache"] == 512 * 2 * 6 * 2 * 8 * 64 * 2
    model = data["model"]
    assert model["kind"] == "encoder-decoder" and model["architecture"] == "T5ForConditionalGeneration"
    assert sum(model["parts"].values()) == model["params"] == 60_506_624


def test_llava_counts_the_vision_tower_and_head_and_says_what_kv_covers():
    shape, plan = served("llava-1.5-7b", context=4096)
    parts = dict(shape.parts)
    assert parts["vision tower"] == 303_507_456 and parts["output head"] == 32064 * 4096
    assert plan.kv_bytes_per_token == 2 * 32 * 32 * 128 * 2  # the Llama-2-7B text model
    assert any("vision tower" in n and "language model" in n for n in shape.notes)


def test_gemma3_multimodal_keeps_its_sliding_window_layers():
    shape, plan = served("gemma-3-4b-it", context=8192)
    assert dict(shape.parts)["vision tower"] == 416_866_032
    per = 2 * 4 * 256
    kinds = {(k.kind, k.window, k.count) for k in shape.kv_layers}
    assert kinds == {("sliding window", 1024, 29), ("full attention", None, 5)}
    assert plan.bucket_dict()["kv_cache"] == (29 * 1024 + 5 * 8192) * per * 2


def test_llama4_counts_its_vision_model_and_caps_the_default_context():
    shape, _ = served("llama-4-scout-17b-16e")
    assert dict(shape.parts)["vision tower"] == 850_960_896
    assert shape.experts == (16, 1) and shape.max_positions == 10_485_760
    plan = build_plan(PlanRequest(shape=shape, mode="infer"))  # no context given
    assert plan.context == 131_072  # not 10,485,760 tokens
    # chunked attention (attention_chunk_size 8192) on 3 of 4 layers, global on the 4th
    kinds = {(k.kind, k.window, k.count) for k in shape.kv_layers}
    assert kinds == {("sliding window", 8192, 36), ("full attention", None, 12)}


def test_bert_is_an_encoder_with_no_kv_cache():
    shape, plan = served("bert-base-uncased", context=512)
    assert shape.kind == "encoder" and shape.kv_layers == ()
    assert set(plan.bucket_dict()) == {"weights"}
    assert any("encoder keeps no KV cache" in n for n in plan.notes)


def test_gpt_oss_mxfp4_experts_are_sized_and_the_rest_stays_16_bit():
    shape, plan = served("gpt-oss-20b", context=4096)
    experts = 24 * 32 * (2880 * 2 * 2880 + 2880 * 2880)
    rest = shape.params - experts  # attention, router, embeddings, head: not converted
    b = plan.bucket_dict()
    assert b["weights"] + b["quantization_metadata"] == experts // 2 + experts // 32 + 2 * rest
    assert b["weights"] + b["quantization_metadata"] == 13_761_264_768  # ~13.8 GB as shipped
    _, bf16 = served("gpt-oss-20b", context=4096, precision="bf16")
    assert bf16.bucket_dict()["weights"] == 2 * shape.params  # --precision honoured


def test_training_an_attention_free_model_says_activations_are_not_modelled(capsys):
    rc = main(
        [
            "plan",
            "--config",
            str(CONFIGS / "mamba-codestral-7b.json"),
            "--batch",
            "1",
            "--seq",
            "2048",
            "--gpu-memory",
            "80GiB",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "attention-free model (mamba2) are not modelled" in err
    assert (
        main(
            ["plan", "--config", str(CONFIGS / "mamba-codestral-7b.json"), "--gpu-memory", "80GiB", "--json"]
        )
        == 0
    )


@pytest.mark.parametrize(
    "name",
    ["mamba-codestral-7b", "bamba-9b", "jamba-v0.1", "falcon-h1-0.5b", "qwen3-next-80b-a3b", "bart-large"],
)
def test_without_transformers_the_checkpoint_count_gets_the_same_cache_and_state(name):
    from vramscope.core.planner.configs import shape_from_counts

    meta = shape_from_config(config(name))
    headers = shape_from_counts(config(name), (("BF16", meta.params),))
    assert headers.params == meta.params
    assert headers.kv_bytes_per_token_element == meta.kv_bytes_per_token_element
    assert headers.state_elements == meta.state_elements


def test_an_architectures_entry_of_another_family_is_not_built():
    cfg = {**config("falcon-h1-0.5b"), "architectures": ["BertForMaskedLM"]}
    shape = shape_from_config(cfg)
    assert shape.params == 521_411_104 and shape.architecture == "FalconH1ForCausalLM"
