"""The what-if from a measured run (core/planner/what_if.py): real CPU runs at 2x
and 4x the micro-batch within 5 %, a longer sequence inside the predicted range,
the per-module wire format read either way a tree may be given, and each change
moving the part it should."""

from __future__ import annotations

import pytest

from tests.core.planner.what_if_runs import counted_step, prediction_error
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.measured_run import NO_ACTIVATIONS, SOURCE_PEAK, measure, split_modules
from vramscope.core.planner.what_if import Change, Target, predict

MiB = 1 << 20


@pytest.mark.parametrize("kind", ["mlp", "lm"])
@pytest.mark.parametrize("factor", [2, 4])
def test_batch_2x_and_4x_within_5_percent_of_real_cpu_runs(kind, factor):
    r = prediction_error(kind, 8, factor)
    assert abs(r["error"]) <= 0.05, r


def _measured(kind="lm", batch=8, seq=64):
    base = counted_step(kind, batch, seq)
    return measure(
        "cpu",
        {k: base[k] for k in ("weights", "gradients", "optimizer_state")},
        input_shape=base["input"],
        models=base["models"],
        modules=base["modules"],
    )


@pytest.mark.slow
def test_a_longer_sequence_lands_inside_the_range_and_the_attention_part_is_named():
    w = predict(_measured(), Change(seq=128))
    real = counted_step("lm", 8, 128)["real"]
    assert w.peak < w.peak_high  # plain attention: linear .. quadratic
    assert w.peak <= real <= w.peak_high, (w.peak, real, w.peak_high)
    acts = {p.name: p for p in w.parts}["activations"]
    assert "seq^2" in acts.scales
    flash = predict(_measured(), Change(seq=128, flash_attention=True))
    assert flash.peak == flash.peak_high == w.peak


ROWS = [  # a tree of totals, with a container (never called) saying 0
    {"name": "", "parent": None, "activations": 1000},
    {"name": "h", "parent": "", "activations": 0},
    {"name": "h.0", "parent": "h", "activations": 450},
    {"name": "h.0.attn", "parent": "h.0", "activations": 300},
    {"name": "h.0.mlp", "parent": "h.0", "activations": 150},
    {"name": "h.1", "parent": "h", "activations": 450},
    {"name": "h.1.attn", "parent": "h.1", "activations": 300},
    {"name": "h.1.mlp", "parent": "h.1", "activations": None, "why": "compiled"},
    {"name": "head", "parent": "", "activations": 100},
]


def test_module_figures_as_a_tree_of_totals_or_each_its_own_add_up_the_same():
    total, attention, blocks = split_modules(
        [(r["name"], r["parent"], r["activations"]) for r in ROWS if r["activations"] is not None]
    )
    assert (total, attention) == (1000, 600)
    assert [b[0] for b in blocks] == ["h.0", "h.1"] and dict(blocks)["h.0"] == 450
    own = [
        ("", None, 100),
        ("h.0", "", 0),
        ("h.0.attn", "h.0", 300),
        ("h.0.mlp", "h.0", 150),
        ("h.1", "", 0),
        ("h.1.attn", "h.1", 300),
        ("h.1.mlp", "h.1", 150),
    ]
    assert split_modules(own)[:2] == (1000, 600)


def test_the_wire_item_is_read_and_bad_rows_are_left_out():
    item = {
        "step": 7,
        "device": "cuda:0",
        "modules": ROWS
        + [
            {"name": 5, "activations": 10**9},
            {"name": "x", "parent": None, "activations": -1},
            {"name": "y", "parent": None, "activations": True},
            "junk",
        ],
    }
    m = measure(
        "cuda:0",
        {"weights": 10, "gradients": 10, "optimizer_state": 20},
        input_shape={"batch": 4, "seq": 16},
        modules=item,
    )
    assert m.activations == 1000 and m.attention == 600 and m.module_count == 8


def test_without_modules_the_step_peak_gives_activations_and_temporaries():
    steps = [{"phase_peaks": {"cuda:0": {"forward": [900 * MiB, None], "backward": [1000 * MiB, None]}}}]
    m = measure(
        "cuda:0",
        {"weights": 100 * MiB, "gradients": 100 * MiB, "optimizer_state": 200 * MiB},
        steps=steps,
        input_shape={"batch": 4},
    )
    assert m.source == SOURCE_PEAK and m.activations == 600 * MiB and m.peak == 1000 * MiB
    w = predict(m, Change(batch=8), [Target("GPU 0", 2048 * MiB, 1500 * MiB)])
    assert w.peak_now == 1000 * MiB and w.peak == 1600 * MiB
    assert w.verdict(w.targets[0]) == (True, False)  # fits the card, not what is free now
    assert w.to_json()["targets"][0]["fits_now"] is False


def test_a_cpu_run_without_module_figures_says_activations_are_not_known():
    m = measure("cpu", {"weights": 10, "gradients": 10, "optimizer_state": 20}, input_shape={"batch": 4})
    assert m.activations is None and m.source == NO_ACTIVATIONS
    w = predict(m, Change(batch=8), [Target("GPU", 100, 100)])
    assert w.peak is None and NO_ACTIVATIONS in w.notes
    assert w.verdict(w.targets[0]) == (None, None)


@pytest.mark.slow
def test_changes_move_the_parts_they_should():
    m = _measured()
    base = predict(m, Change())
    parts = lambda w: {p.name: p.predicted for p in w.parts}  # noqa: E731
    ck = predict(m, Change(checkpointing=True))
    assert parts(ck)["activations"] < parts(base)["activations"]
    assert parts(ck)["weights"] == parts(base)["weights"]
    eight = predict(m, Change(optimizer_8bit=True))
    assert parts(eight)["optimizer state"] == round(m.optimizer_state / 4)
    lora = predict(m, Change(lora_rank=4, hidden=128))
    assert parts(lora)["gradients"] == round(m.gradients * 8 / 128)
    bf16 = predict(m, Change(bf16=True))
    assert parts(bf16)["activations"] == round(m.activations / 2)
    assert parts(bf16)["bf16 weight copies (autocast)"] == round(m.weights / 2)


@pytest.mark.slow
def test_a_change_the_run_cannot_be_scaled_to_is_refused_with_the_field():
    m = measure("cpu", {"weights": 1}, input_shape=None)
    with pytest.raises(PlanError) as e:
        predict(m, Change(batch=4))
    assert e.value.field == "batch"
    m = _measured("mlp")
    with pytest.raises(PlanError) as e:
        predict(m, Change(seq=128))
    assert e.value.field == "seq"


def test_gradients_sampled_in_the_middle_of_a_backward_are_planned_whole():
    """A sample is true at its instant: one taken while the backward is half done holds the
    gradients of the layers done so far (plan --pid once read 2 of 4 blocks' there and
    planned 12 % short). The plan counts the gradients the backward makes: one for each
    trainable parameter; a wider measured figure (fp32 gradients of bf16 weights) stands."""
    models = [{"params": 1000, "trainable": 1000, "optimizer": {"class": "AdamW"}}]
    half = {"weights": 4000, "gradients": 2000, "optimizer_state": 8000}
    assert measure("cpu", half, models=models).gradients == 4000
    frozen = [{"params": 1000, "trainable": 250}]
    assert measure("cpu", {"weights": 4000, "gradients": 0}, models=frozen).gradients == 1000
    wide = {"weights": 2000, "gradients": 4000, "optimizer_state": 8000}  # bf16 weights, fp32 grads
    assert measure("cpu", wide, models=models).gradients == 4000
    assert measure("cpu", half).gradients == 2000  # (no model summary: the figure as measured)
