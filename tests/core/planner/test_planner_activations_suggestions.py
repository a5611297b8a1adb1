"""Activations (named formula), and the order of least damaging changes."""

from __future__ import annotations

from planner_configs import config

from vramscope.core.planner import PlanRequest, build_plan, shape_from_config, shape_from_params
from vramscope.core.planner.training import activation_bytes
from vramscope.core.units import GB, GiB

LLAMA = shape_from_config(config("llama-2-7b"))


def test_korthikanti_formula_per_layer():
    s, b, h, a, L = 2048, 4, 4096, 32, 32
    act = activation_bytes(batch=b, seq=s, hidden=h, layers=L, heads=a)
    assert act.per_layer == s * b * h * 34 + 5 * a * s * s * b  # s·b·h·(34 + 5·a·s/h)
    assert act.bytes == L * act.per_layer
    assert "Korthikanti" in act.formula


def test_flash_attention_removes_the_quadratic_term():
    base = dict(batch=1, seq=8192, hidden=4096, layers=32, heads=32)
    flash = activation_bytes(**base, flash_attention=True)
    assert flash.per_layer == 34 * 8192 * 1 * 4096
    # doubling the sequence doubles flash activations, more than doubles the plain ones
    longer = dict(base, seq=16384)
    assert activation_bytes(**longer, flash_attention=True).bytes == 2 * flash.bytes
    assert activation_bytes(**longer).bytes > 2 * activation_bytes(**base).bytes


def test_checkpointing_grows_with_the_square_root_of_depth():
    base = dict(batch=1, seq=1024, hidden=1024, heads=16, flash_attention=True)
    per_layer = 34 * 1024 * 1024
    boundary = 2 * 1024 * 1024
    ckpt = activation_bytes(**base, layers=100, checkpointing=True)
    # 100 layers: 10 segment inputs + one segment of 10 layers ("the size of 10")
    assert ckpt.bytes == 10 * boundary + 10 * per_layer
    assert activation_bytes(**base, layers=100).bytes == 100 * per_layer
    assert "Chen et al. 2016" in ckpt.formula


def test_activations_scale_with_micro_batch_not_fixed_cost():
    one = build_plan(PlanRequest(shape=LLAMA, batch=1, seq=2048))
    four = build_plan(PlanRequest(shape=LLAMA, batch=4, seq=2048))
    assert four.bucket_dict()["activations"] == 4 * one.bucket_dict()["activations"]
    assert four.fixed_per_gpu == one.fixed_per_gpu  # batch 1 frees none of buckets 1-3


def test_missing_activations_are_said_not_zero():
    plan = build_plan(PlanRequest(shape=LLAMA))
    assert "activations" not in plan.bucket_dict()
    assert any("activations not planned" in n for n in plan.notes)


def test_a_7b_full_fine_tune_on_one_24_gib_gpu_suggests_lora_not_more_gpus():
    plan = build_plan(PlanRequest(shape=LLAMA, precision="mixed", gpus_memory=(("24 GiB", 24 * GiB),)))
    changes = [s.change for s in plan.suggestions]
    assert changes[0].startswith("LoRA rank 8") and plan.suggestions[0].fits
    assert not any("ZeRO" in c or "GPUs" in c for c in changes)


def test_qlora_follows_lora_when_the_16_bit_base_is_still_too_big():
    plan = build_plan(
        PlanRequest(shape=LLAMA, precision="fp32", optimizer="sgd", gpus_memory=(("24 GiB", 24 * GiB),))
    )
    changes = [s.change.split(":")[0] for s in plan.suggestions]
    assert changes[0].startswith("LoRA rank 8") and not plan.suggestions[0].fits
    assert changes[1] == "QLoRA" and plan.suggestions[1].fits
    totals = [s.per_gpu_total for s in plan.suggestions]
    assert totals == sorted(totals, reverse=True)  # each step reduces


def test_zero_is_offered_only_across_the_gpus_present():
    count_only = shape_from_params(7 * 10**9)  # no layer shapes: no LoRA to size
    four = build_plan(PlanRequest(shape=count_only, gpus_memory=(("24 GiB", 24 * GiB),) * 4))
    changes = [s.change for s in four.suggestions]
    assert changes[0].startswith("8-bit Adam")
    assert changes[1].startswith("ZeRO stage") and "of the 4 GPUs here" in changes[1]
    assert four.suggestions[-1].fits
    one = build_plan(PlanRequest(shape=count_only, gpus_memory=(("24 GiB", 24 * GiB),)))
    assert not any(s.change.startswith("ZeRO stage") for s in one.suggestions)
    assert any("more GPUs" in n for n in one.notes)  # said as what it would take, not a step


def test_lora_suggestion_recomputes_the_total():
    plan = build_plan(PlanRequest(shape=LLAMA, zero_stage=3, gpus=1, gpus_memory=(("16 GB", 16 * GB),)))
    lora = [s for s in plan.suggestions if s.change.startswith("LoRA rank 8")]
    assert lora, [s.change for s in plan.suggestions]
    assert "q_proj, v_proj" in lora[0].change


def test_activation_problem_goes_micro_batch_then_checkpointing_then_sdpa():
    # small model: fixed cost fits, activations do not
    s = shape_from_config(config("gpt2"))
    plan = build_plan(
        PlanRequest(shape=s, precision="fp32", batch=64, seq=1024, gpus_memory=(("8 GiB", 8 * GiB),))
    )
    assert plan.fixed_per_gpu < 8 * GiB < plan.per_gpu_total
    changes = [x.change for x in plan.suggestions]
    assert changes[0].startswith("micro-batch") and "effective batch 64" in changes[0]
    assert plan.suggestions[-1].fits
    tight = build_plan(
        PlanRequest(shape=s, precision="fp32", batch=1, seq=8192, gpus_memory=(("6 GiB", 6 * GiB),))
    )
    steps = [x.change.split(" (")[0] for x in tight.suggestions]
    assert steps[:2] == ["gradient checkpointing", "SDPA / flash attention"]


def test_micro_batch_keeps_the_effective_batch():
    s = shape_from_config(config("gpt2"))
    plan = build_plan(
        PlanRequest(
            shape=s,
            precision="fp32",
            batch=32,
            seq=1024,
            checkpointing=True,
            gpus_memory=(("4 GiB", 4 * GiB),),
        )
    )
    step = plan.suggestions[0]
    assert step.change.startswith("micro-batch")
    micro = int(step.change.split()[1])
    acc = int(step.change.split("× ")[1].split()[0])
    assert micro * acc == 32 and step.fits


def test_inference_suggestions_cap_then_fp8_then_quantize():
    s = shape_from_config(config("llama-2-7b"))
    plan = build_plan(
        PlanRequest(shape=s, mode="infer", context=4096, concurrency=64, gpus_memory=(("A100", 80 * GiB),))
    )
    assert not plan.gpus[0].fits
    first, second, *rest = plan.suggestions
    assert first.change.startswith("serve at most 33 concurrent") and first.fits
    assert "request 34 waits" in first.change
    assert second.change.startswith("fp8 KV cache")
    assert second.per_gpu_total == 2 * s.params + 64 * 4096 * 262_144
    assert [r.change.split(" (")[0] for r in rest] == [
        "quantize the weights to INT8",
        "quantize the weights to INT4",
    ]


def test_inference_weights_too_big_goes_straight_to_quantization():
    plan = build_plan(
        PlanRequest(shape=shape_from_params(70 * 10**9), mode="infer", gpus_memory=(("A100", 80 * GiB),))
    )
    assert [s.change.split(" (")[0] for s in plan.suggestions] == [
        "quantize the weights to INT8",
        "quantize the weights to INT4",
    ]
    assert plan.suggestions[0].per_gpu_total >= 70 * GB
    assert plan.suggestions[1].fits


def test_no_gpu_means_no_verdict_and_no_suggestions():
    plan = build_plan(PlanRequest(shape=LLAMA))
    assert plan.gpus == () and plan.suggestions == ()
