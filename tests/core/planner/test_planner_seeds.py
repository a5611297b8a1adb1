"""Textbook figures, exactly: weights per precision (Ψ × bytes per parameter),
mixed-precision Adam's 16 bytes per parameter and the ZeRO stages (Rajbhandari
et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
2020), and the KV cache formula 2 × layers × KV heads × head dim × bytes per
token (as in vLLM's PagedAttention paper, Kwon et al. 2023)."""

from __future__ import annotations

import pytest

from vramscope.core.planner import PlanRequest, build_plan, shape_from_params
from vramscope.core.planner.inference import conversations_that_fit, kv_bytes_per_token
from vramscope.core.units import GB, GiB

B7 = 7_000_000_000
# A Llama-2-7B-shaped serving example: 32 layers, 32 KV heads, head dim 128.
SEVEN_B = shape_from_params(B7, layers=32, hidden=4096, heads=32, kv_heads=32, head_dim=128)


def train(shape=SEVEN_B, **kw):
    return build_plan(PlanRequest(shape=shape, mode="train", **kw))


def infer(shape=SEVEN_B, **kw):
    return build_plan(PlanRequest(shape=shape, mode="infer", **kw))


@pytest.mark.parametrize(
    "params, gb", [(7, (28, 14, 14, 7, 3.5)), (13, (52, 26, 26, 13, 6.5)), (70, (280, 140, 140, 70, 35))]
)
def test_precision_table_weights_in_decimal_gb(params, gb):
    shape = shape_from_params(params * 10**9)
    for precision, expected in zip(("fp32", "bf16", "fp16", "int8", "int4"), gb):
        plan = infer(shape, precision=precision)
        assert plan.bucket_dict()["weights"] == expected * GB, precision


def test_quantized_weights_state_their_metadata_separately():
    plan = infer(shape_from_params(70 * 10**9), precision="int4")
    buckets = plan.bucket_dict()
    assert buckets["weights"] == 35 * GB  # the idealized Ψ × 0.5 B stays as is
    # the stated allowance: one 4-byte scale per 64 weights
    assert buckets["quantization_metadata"] == 70 * 10**9 // 64 * 4
    assert "scale per 64" in plan.explanation("quantization_metadata")
    assert plan.per_gpu_total > 35 * GB


def test_7b_bf16_weights_are_14_gb():
    assert infer(precision="bf16").bucket_dict()["weights"] == 14 * GB


def test_hf_layout_18_bytes_per_param_is_126_gb():
    plan = train(precision="mixed", grad_layout=18)
    b = plan.bucket_dict()
    assert b == {
        "weights": 14 * GB,
        "master_weights": 28 * GB,
        "optimizer_state": 56 * GB,
        "gradients": 28 * GB,
    }
    assert plan.per_gpu_total == 126 * GB
    assert "2 + 4 + 4 + 8 = 18 B/param" in plan.layout


@pytest.mark.parametrize(
    "precision, expected",
    [
        ("fp32", {"weights": 28 * GB, "gradients": 28 * GB, "optimizer_state": 56 * GB}),
        (
            "mixed",
            {"weights": 14 * GB, "gradients": 14 * GB, "master_weights": 28 * GB, "optimizer_state": 56 * GB},
        ),
    ],
)
def test_sixteen_bytes_per_param_is_112_gb_fp32_or_mixed(precision, expected):
    plan = train(precision=precision, optimizer="adam")
    assert plan.bucket_dict() == expected
    assert plan.per_gpu_total == 112 * GB
    assert "= 16 B/param" in plan.layout


def test_112_gb_does_not_fit_one_80_gb_card_and_ddp_divides_nothing():
    card = (("A100 80GB", 80 * GiB),)
    one = train(gpus_memory=card)
    assert not one.gpus[0].fits
    eight_ddp = train(gpus=8, zero_stage=0, gpus_memory=card)
    assert eight_ddp.per_gpu_total == 112 * GB  # per card identical
    assert not eight_ddp.gpus[0].fits
    assert any("divides nothing" in n for n in eight_ddp.notes)


@pytest.mark.parametrize(
    "stage, per_gpu",
    [
        (0, (2 + 2 + 12) * B7),  # ZeRO paper: (2 + 2 + K)Ψ, K = 12
        (1, 2 * B7 + 2 * B7 + 12 * B7 // 8),
        (2, 2 * B7 + (2 + 12) * B7 // 8),
        (3, (2 + 2 + 12) * B7 // 8),
    ],
)
def test_zero_stages_per_gpu_model_states(stage, per_gpu):
    assert train(zero_stage=stage, gpus=8).per_gpu_total == per_gpu


def test_fsdp_is_stage_3_and_total_counts_every_gpu():
    plan = train(fsdp=True, gpus=8)
    assert plan.per_gpu_total == 14 * GB  # 112 GB / 8
    assert plan.total == 112 * GB


@pytest.mark.parametrize("optimizer, state", [("adam8bit", 2), ("sgd-momentum", 4), ("sgd", 0)])
def test_optimizer_state_bytes(optimizer, state):
    plan = train(precision="fp32", optimizer=optimizer)
    assert plan.bucket_dict()["optimizer_state"] == state * B7
    assert plan.per_gpu_total == (8 + state) * B7


def test_offload_moves_optimizer_state_to_host_ram():
    plan = train(offload_optimizer=True)
    b = plan.bucket_dict()
    assert b["optimizer_state"] == 0 and b["master_weights"] == 0
    assert plan.per_gpu_total == 28 * GB  # bf16 weights + bf16 gradients stay
    assert dict(plan.host_buckets)["optimizer_state"] == 84 * GB


def test_kv_cache_per_token_conversation_and_33_conversations():
    assert kv_bytes_per_token(SEVEN_B, "bf16") == 524_288  # 2*32*32*128*2, about 512 KB
    plan = infer(context=4096, gpus_memory=(("A100 80GB", 80 * GiB),))
    assert plan.kv_bytes_per_conversation == 2 * GiB  # "a 4096-token conversation costs 2 GB"
    # The worked example "66 GB of headroom is 33 conversations": 66 (binary) GB / 2 GiB.
    assert conversations_that_fit(66 * GiB, 2 * GiB) == 33
    # ... and on a real 80 GiB card beside 14 GB of bf16 weights: 33 fit, request 34 waits.
    assert plan.gpus[0].conversations == 33
    assert plan.bucket_dict()["kv_cache"] == 2 * GiB


def test_fp8_kv_cache_halves_the_term():
    assert kv_bytes_per_token(SEVEN_B, "fp8") == 262_144
    plan = infer(context=4096, kv_dtype="fp8", concurrency=10)
    assert plan.bucket_dict()["kv_cache"] == 10 * GiB


def test_inference_has_no_gradients_or_optimizer_state():
    b = infer(context=4096).bucket_dict()
    assert set(b) == {"weights", "kv_cache"}


def test_serving_7b_on_24_gb_fits_but_training_needs_126_gb():
    gpu = (("24 GB", 24 * GB),)
    serve = infer(context=4096, gpus_memory=gpu)
    assert serve.gpus[0].fits and serve.gpus[0].margin == 24 * GB - 14 * GB - 2 * GiB
    full = train(grad_layout=18, gpus_memory=gpu)
    assert full.per_gpu_total == 126 * GB and not full.gpus[0].fits
