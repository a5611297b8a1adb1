"""The planner tab: form -> plan -> tables; planned beside measured; screenshots."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
torch = pytest.importorskip("torch")

import json  # noqa: E402

from planner_configs import CONFIGS  # noqa: E402

from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport  # noqa: E402
from vramscope.core.units import GB, GiB  # noqa: E402
from vramscope.ui.planner.planner_tab import PlannerTab  # noqa: E402


@pytest.fixture
def tab(qapp, qtbot):
    from vramscope.ui.qt import theme

    theme.apply(qapp)
    w = PlannerTab(gpus=[("GPU 0: NVIDIA A100-SXM4-80GB", 80 * GiB)])
    qtbot.addWidget(w)
    w.resize(1500, 1000)
    w.show()
    qtbot.waitExposed(w)
    return w


def cells(table, col):
    return [table.item(r, col).text() if table.item(r, col) else "" for r in range(table.rowCount())]


def settle(qtbot, tab):
    qtbot.wait(20)
    tab.recompute()


def test_7b_mixed_precision_adam_training_does_not_fit_and_suggests_8bit_first(tab, qtbot, artifacts_dir):
    settle(qtbot, tab)
    assert tab.plan.per_gpu_total == 112 * GB  # 7B, mixed + Adam: 16 B/param
    assert cells(tab.buckets, 0)[:4] == ["weights", "gradients", "master weights", "optimizer state"]
    assert "does NOT fit" in cells(tab.gpu_table, 2)[0]
    assert cells(tab.suggestions, 3)[0].startswith("8-bit Adam")
    assert "Does not fit" in tab.verdict.text()
    qtbot.wait(300)
    tab.grab().save(str(artifacts_dir / "planner_tab_train_7b.png"))


def test_inference_config_and_conversations(tab, qtbot, artifacts_dir):
    tab.load_config(str(CONFIGS / "llama-2-7b.json"))
    tab.mode.setCurrentIndex(tab.mode.findData("infer"))
    tab.context.setValue(4096)
    tab.concurrency.setValue(64)
    settle(qtbot, tab)
    assert tab.plan.mode == "infer"
    assert tab.plan.kv_bytes_per_token == 524_288
    assert "33 conversations of 4,096 tokens" in cells(tab.gpu_table, 2)[0]
    assert cells(tab.suggestions, 3)[0].startswith("serve at most 33")
    qtbot.wait(300)
    tab.grab().save(str(artifacts_dir / "planner_tab_infer_llama2.png"))


def test_bad_input_shows_a_message_and_keeps_the_input(tab, qtbot):
    tab.params.setText("seven billion")
    settle(qtbot, tab)
    assert tab.plan is None and "not a parameter count" in tab.error_label.text()
    assert tab.error_label.isVisible()
    assert tab.params.text() == "seven billion"
    tab.params.setText("13B")
    settle(qtbot, tab)
    assert tab.plan is not None and not tab.error_label.isVisible()
    assert tab.plan.per_gpu_total == 16 * 13 * GB


def test_typed_gpu_memory_overrides_detected(tab, qtbot):
    tab.gpu_memory.setText("RTX 4090=24GiB, 80GB")
    settle(qtbot, tab)
    assert cells(tab.gpu_table, 0) == ["RTX 4090", "80GB GPU"]


@pytest.mark.slow
def test_planned_beside_measured_from_a_real_cpu_model(tab, qtbot, artifacts_dir):
    from tiny_decoder import TinyDecoder, train_step
    from vramscope.agent.tensors.buckets import tensor_buckets

    from planner_configs import TINY_QWEN2

    path = artifacts_dir / "tiny_qwen2_config.json"
    path.write_text(json.dumps(TINY_QWEN2))
    torch.manual_seed(0)
    model = TinyDecoder(TINY_QWEN2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train_step(model, opt, TINY_QWEN2["vocab_size"])
    got = tensor_buckets([model], [opt])["cpu"]
    report = AgentReport(
        pid=4242,
        start_time=1.0,
        step=1,
        devices=(AgentDevice(device="cpu", allocated=None, buckets=AgentBuckets(**got)),),
    )

    tab.load_config(str(path))
    tab.precision.setCurrentIndex(tab.precision.findData("fp32"))
    tab.optimizer.setCurrentIndex(tab.optimizer.findData("adamw"))
    settle(qtbot, tab)
    tab.show_measured(report)
    labels = cells(tab.measured, 0)
    diffs = dict(zip(labels, cells(tab.measured, 3)))
    assert diffs["weights"] == "exact"
    assert diffs["gradients"] == "exact"
    assert diffs["optimizer state"] == "exact"
    assert dict(zip(labels, cells(tab.measured, 2)))["cache / fragmentation"] == "no data"
    assert "pid 4242 on cpu" in tab.measured_label.text()
    qtbot.wait(300)
    tab.grab().save(str(artifacts_dir / "planner_tab_planned_vs_measured.png"))


def test_no_report_says_no_agent(tab, qtbot):
    settle(qtbot, tab)
    tab.show_measured(None)
    assert "no agent attached" in tab.measured_label.text()
    assert tab.measured.rowCount() == 0
