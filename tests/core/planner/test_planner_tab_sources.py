"""The planner tab as a user meets it: it starts from the attached process,
always ends with a verdict, shows every row in GiB, names the field of an
error, and reads models by name from the local Hugging Face cache."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("PySide6")

from planner_configs import CONFIGS  # noqa: E402

from vramscope.core.planner import config_source  # noqa: E402
from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport  # noqa: E402
from vramscope.core.units import GiB  # noqa: E402
from vramscope.ui.planner.planner_tab import PlannerTab  # noqa: E402

MODEL = {
    "name": "Net",
    "params": 1_000_000,
    "tensors": 10,
    "trainable": 1_000_000,
    "trainable_tensors": 10,
    "param_bytes": 4_000_000,
    "trainable_bytes": 4_000_000,
    "dtypes": {"float32": 1_000_000},
    "optimizer": {"class": "AdamW"},
}


def report(peak=None, allocated=16_000_000, models=(MODEL,), pid=777):
    buckets = AgentBuckets(
        weights=4_000_000,
        gradients=4_000_000,
        optimizer_state=8_000_000,
        other_allocated=0,
        cached_free=1_000_000,
    )
    return AgentReport(
        pid=pid,
        start_time=5.0,
        step=3,
        models=models,
        devices=(AgentDevice(device="cuda:0", allocated=allocated, peak_allocated=peak, buckets=buckets),),
    )


def make(qtbot, gpus=(("GPU 0: NVIDIA GeForce RTX 4090", 24 * GiB),), size=(1400, 900)):
    from vramscope.ui.qt import theme

    theme.apply(qtbot._request.getfixturevalue("qapp"))
    tab = PlannerTab(gpus=list(gpus))
    qtbot.addWidget(tab)
    tab.resize(*size)
    tab.show()
    qtbot.waitExposed(tab)
    return tab


def shown(tab, qtbot):
    qtbot.wait(300)  # the deferred recompute, then the tables fit their wrapped rows
    return tab


def text_of(table):
    return [
        table.item(r, c).text()
        for r in range(table.rowCount())
        for c in range(table.columnCount())
        if table.item(r, c)
    ]


def test_an_attached_process_becomes_the_plan_and_its_peak_stands_beside_it(qtbot, artifacts_dir):
    tab = make(qtbot)
    tab.show_measured(report(peak=17_000_000))
    tab.show_measured(report(peak=20_000_000))
    tab.show_measured(report(peak=18_000_000))
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.request.trainable_params is not None)
    assert tab.source.currentData() == "agent"
    rows = {tab.measured.item(r, 0).text().split(" (")[0]: r for r in range(tab.measured.rowCount())}
    peak = rows["peak allocated"]
    assert tab.measured.item(peak, 2).toolTip().startswith("20,000,000 B")  # the most seen
    # why they differ, in words: the row's tooltip, and folded under the table
    assert "temporaries" in tab.measured.item(peak, 0).toolTip()
    assert "temporaries" in tab.measured_view.why.text() and not tab.measured_view.why.body.isVisible()
    assert tab.measured.item(rows["weights"], 3).text() == "exact"
    shown(tab, qtbot).grab().save(str(artifacts_dir / "planner_tab_attached_1400x900.png"))


def test_a_chosen_source_is_kept_and_never_compared_with_an_unrelated_process(qtbot):
    tab = make(qtbot)
    tab.source.setCurrentIndex(tab.source.findData("params"))
    tab.source.activated.emit(tab.source.currentIndex())  # the user picked it
    tab.show_measured(report())
    shown(tab, qtbot)
    assert tab.source.currentData() == "params"
    assert tab.measured.rowCount() == 0
    assert "not of its model" in tab.measured_label.text()


def test_without_a_driver_the_verdict_still_answers(qtbot, artifacts_dir):
    tab = make(qtbot, gpus=())
    shown(tab, qtbot)
    text = tab.verdict.text()
    assert "104.31 GiB per GPU" in text  # 7B at 16 B/param
    assert "No GPU to compare against" in text and "enter a GPU memory size" in text
    tab.params.setText("1B")
    shown(tab, qtbot)
    assert "fits a 16 GiB card" in tab.verdict.text()
    tab.grab().save(str(artifacts_dir / "planner_tab_no_driver.png"))


def test_every_bucket_row_is_visible_in_gib_without_exponents(qtbot, artifacts_dir):
    tab = make(qtbot, size=(1024, 700))
    tab.load_config(str(CONFIGS / "llama-2-7b.json"))
    tab.batch.setValue(2)
    tab.seq.setValue(2048)
    shown(tab, qtbot)
    buckets = tab.buckets
    assert buckets.item(buckets.rowCount() - 2, 0).text() == "total per GPU" or any(
        buckets.item(r, 0).text() == "total per GPU" for r in range(buckets.rowCount())
    )
    assert buckets.height() >= buckets.verticalHeader().length()  # no row hidden
    words = " ".join(text_of(buckets) + text_of(tab.gpu_table) + [tab.verdict.text()])
    assert "GiB" in words and " GB" not in words and not re.search(r"\de-\d", words)
    assert "< 0.01 MiB" in words  # Adam's step counters: tiny, said plainly (in MiB, under 1 GiB)
    tab.grab().save(str(artifacts_dir / "planner_tab_llama2_1024x700.png"))


def test_errors_name_the_form_field_not_a_command_line_option(qtbot):
    tab = make(qtbot)
    tab.precision.setCurrentIndex(tab.precision.findData("int4"))
    shown(tab, qtbot)
    assert tab.plan is None and tab.error_field == "precision"
    assert tab.error_label.text().startswith("Precision: int4 weights cannot be trained")
    assert "--" not in tab.error_label.text()


def test_a_model_by_name_from_the_local_cache(qtbot):
    from test_planner_model_name import cache_model

    cache_model(config_source.hub_cache_dir(), "Qwen/Qwen2.5-7B", "qwen2.5-7b")
    tab = make(qtbot)
    tab.load_model("Qwen/Qwen2.5-7B")
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.request.shape.params == 7_615_616_512)
    assert [tab.model_name.itemText(i) for i in range(tab.model_name.count())] == ["Qwen/Qwen2.5-7B"]
    assert "hand formula" in tab.model_status.text()
    tab.load_model("org/not-cached")
    qtbot.waitUntil(lambda: tab.error is not None)
    assert tab.error.startswith(
        "Model name: org/not-cached: offline (HF_HUB_OFFLINE is set) and not in the local cache"
    )


def test_a_family_counted_on_the_meta_device_loads_without_blocking(qtbot):
    pytest.importorskip("transformers")
    tab = make(qtbot)
    tab.load_config(str(CONFIGS / "mixtral-8x7b-v0.1.json"))
    qtbot.waitUntil(
        lambda: tab.plan is not None and tab.plan.request.shape.params == 46_702_792_704, timeout=60_000
    )
    assert "active per token" in tab.layout_label.text()


def test_a_context_past_the_limit_is_warned_beside_the_verdict(qtbot):
    tab = make(qtbot)
    tab.load_config(str(CONFIGS / "gpt2.json"))
    tab.mode.setCurrentIndex(tab.mode.findData("infer"))
    tab.context.setValue(8192)
    shown(tab, qtbot)
    assert tab.warning.isVisible()
    assert "n_positions = 1,024" in tab.warning.text()
    tab.context.setValue(1024)
    shown(tab, qtbot)
    assert not tab.warning.isVisible()


def sharded_report(scheme, world_size, held, shards, **extra):
    """One rank of a sharded run: the whole model's count, this rank's share measured
    (``shards``: how many ways its weights, gradients and optimizer state are split)."""
    model = dict(MODEL, local_params=held)
    w, g, o = shards
    buckets = AgentBuckets(
        weights=4_000_000 // w,
        gradients=4_000_000 // g,
        optimizer_state=8_000_000 // o,
        other_allocated=0,
        cached_free=0,
    )
    return AgentReport(
        pid=778,
        start_time=5.0,
        step=3,
        models=(model,),
        sharded={"scheme": scheme, "world_size": world_size, **extra},
        devices=(AgentDevice(device="cuda:0", allocated=16_000_000, buckets=buckets),),
    )


@pytest.mark.parametrize(
    "scheme,world,held,shards,extra,named",
    [
        ("FSDP2", 2, 500_000, (2, 2, 2), {}, "FSDP2 over 2 ranks, each rank holds 1/N of the weights"),
        ("DDP", 4, 1_000_000, (1, 1, 1), {}, "DDP over 4 ranks, replicated"),
        (
            "ZeRO",
            4,
            1_000_000,
            (1, 1, 4),
            {"zero_stage": 1},
            "ZeRO stage 1 over 4 ranks, each rank holds 1/N of the optimizer state",
        ),
    ],
    ids=["fsdp2", "ddp", "zero1"],
)
def test_a_sharded_run_is_planned_per_rank_as_it_runs_and_says_so(
    qtbot, scheme, world, held, shards, extra, named
):
    """Issue 47 item 5: the live plan of one rank of a sharded run uses the run's world size
    and scheme -- the per-rank shard beside the per-rank measurement, each row exact -- and
    the tab names the scheme; the form's ZeRO stage and GPUs show the run's, not editable."""
    tab = make(qtbot)
    tab.show_measured(sharded_report(scheme, world, held, shards, **extra))
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.request.gpus == world)
    shown(tab, qtbot)
    label = tab.live_label.text()
    assert named in label, label
    rows = {tab.measured.item(r, 0).text().split(" (")[0]: r for r in range(tab.measured.rowCount())}
    for name in ("weights", "gradients", "optimizer state"):
        assert tab.measured.item(rows[name], 3).text() == "exact", (name, text_of(tab.measured))
    assert tab.gpus.value() == world and not tab.gpus.isEnabled()
    assert tab.fsdp.isChecked() == (scheme == "FSDP2") and not tab.zero_stage.isEnabled()
    # back to a count: the user chooses the layout again
    tab.source.setCurrentIndex(tab.source.findData("params"))
    tab.source.activated.emit(tab.source.currentIndex())
    shown(tab, qtbot)
    assert tab.gpus.isEnabled() and tab.zero_stage.isEnabled()
