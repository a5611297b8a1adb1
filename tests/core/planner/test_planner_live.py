"""The planner's live input: a real model trained on the CPU with the agent in this
process, read by the monitor's client; the plan made from what the agent reports
about the model equals the agent's measured buckets to the byte."""

from __future__ import annotations

import shutil
import tempfile
import time
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")

from planner_configs import TINY_LLAMA, TINY_QWEN2  # noqa: E402
from tiny_decoder import TinyDecoder, add_lora, train_step  # noqa: E402

from vramscope.agent.core import Agent  # noqa: E402
from vramscope.core.planner import build_plan  # noqa: E402
from vramscope.core.planner.compare import compare  # noqa: E402
from vramscope.core.planner.live import live_model, live_request, optimizer_key  # noqa: E402
from vramscope.core.samples import Frame  # noqa: E402
from vramscope.sources.agents.agent_client import AgentClient  # noqa: E402


@pytest.fixture
def attached(monkeypatch):
    """attach(model, optimizer, train) -> the AgentReport the monitor gets for this process."""
    d = tempfile.mkdtemp(prefix="vs-")  # AF_UNIX paths are short: not under tmp_path
    monkeypatch.setenv("VRAMSCOPE_RUNTIME_DIR", d)
    agents = []

    def attach(model, optimizer, train):
        agent = Agent(interval=0.05, runtime_dir=d, discover=False, final_dump=False)
        agents.append(agent)
        agent.watch(model=model, optimizer=optimizer)
        agent.start()
        assert agent.wait_started(5)
        train()  # the step hook redoes the walk after the update: weights, gradients, state
        agent.sample_once()
        client = AgentClient()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            frame = client(Frame(time=time.time()))
            mine = [r for r in frame.agents if r.pid == agent.identity["pid"]]
            if mine and mine[0].models and mine[0].step:
                client.close()
                return mine[0]
            time.sleep(0.05)
        raise AssertionError("the client never got the agent's report")

    yield attach
    for a in agents:
        a.stop()
    shutil.rmtree(d, ignore_errors=True)


def planned_vs_measured(report, **kw):
    live = live_model(report.models)
    plan = build_plan(live_request(live, **kw))
    rows = {r.label.split(" (")[0]: r for r in compare(plan, report, "cpu")}
    return live, plan, rows


def assert_exact(rows):
    for label in ("weights", "gradients", "optimizer state"):
        row = rows[label]
        assert row.measured is not None and row.planned == row.measured, (label, row)


@pytest.mark.parametrize("cfg", [TINY_QWEN2, TINY_LLAMA], ids=["qwen2-tied-gqa", "llama"])
def test_full_training_with_adamw_planned_from_the_live_model_is_exact(attached, cfg):
    torch.manual_seed(0)
    model = TinyDecoder(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    report = attached(model, opt, lambda: train_step(model, opt, cfg["vocab_size"]))
    live, plan, rows = planned_vs_measured(report)
    assert live.params == sum(p.numel() for p in model.parameters())  # tied counted once
    assert live.trainable == live.params and live.optimizer == "adamw"
    assert live.bytes_per_param == 4 and plan.precision == "fp32"
    assert_exact(rows)
    b = plan.bucket_dict()
    assert b["weights"] == b["gradients"] == 4 * live.params and b["optimizer_state"] == 8 * live.params
    assert "master_weights" not in b


def test_a_frozen_base_with_trained_adapters_is_exact(attached):
    torch.manual_seed(0)
    model = TinyDecoder(TINY_LLAMA)
    adapters = add_lora(model, rank=4, modules=("q_proj", "v_proj"))
    opt = torch.optim.AdamW(adapters, lr=1e-3)
    report = attached(model, opt, lambda: train_step(model, opt, TINY_LLAMA["vocab_size"]))
    live, plan, rows = planned_vs_measured(report)
    n_adapters = sum(p.numel() for p in adapters)
    assert live.trainable == n_adapters and live.frozen == live.params - n_adapters > n_adapters
    assert_exact(rows)
    b = plan.bucket_dict()
    # frozen weights need no gradients and no optimizer state
    assert b["gradients"] == 4 * n_adapters and b["optimizer_state"] == 8 * n_adapters
    assert b["weights"] == 4 * live.params
    assert "frozen" in plan.layout


@pytest.mark.parametrize("momentum,key", [(0.9, "sgd-momentum"), (0.0, "sgd")])
def test_sgd_with_and_without_momentum_is_exact(attached, momentum, key):
    torch.manual_seed(0)
    model = TinyDecoder(TINY_QWEN2)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=momentum)
    report = attached(model, opt, lambda: train_step(model, opt, TINY_QWEN2["vocab_size"]))
    live, plan, rows = planned_vs_measured(report)
    assert live.optimizer == key
    assert_exact(rows)
    assert plan.bucket_dict()["optimizer_state"] == (4 * live.params if momentum else 0)


def test_a_bf16_model_is_planned_as_held_without_an_fp32_master_copy(attached):
    torch.manual_seed(0)
    model = TinyDecoder(TINY_QWEN2).to(torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    report = attached(model, opt, lambda: train_step(model, opt, TINY_QWEN2["vocab_size"]))
    live, plan, rows = planned_vs_measured(report)
    assert live.precision == "bf16" and live.bytes_per_param == 2
    assert_exact(rows)  # Adam's moments are bf16 too: 2 x 2 B, not the 12 B of the ZeRO layout
    assert plan.bucket_dict()["optimizer_state"] == 4 * live.params


def test_mixed_dtypes_use_the_weighted_mean_and_stay_exact():
    models = [
        {
            "name": "M",
            "params": 1000,
            "tensors": 3,
            "trainable": 300,
            "trainable_tensors": 1,
            "param_bytes": 700 * 2 + 300 * 4,
            "trainable_bytes": 300 * 4,
            "dtypes": {"bfloat16": 700, "float32": 300},
            "optimizer": {"class": "AdamW", "amsgrad": False},
        }
    ]
    live = live_model(models)
    assert live.bytes_per_param == Fraction(2600, 1000)
    assert live.dtype_bytes == 4 and live.frozen_dtype_bytes == 2
    b = build_plan(live_request(live)).bucket_dict()
    assert b["weights"] == 2600 and b["gradients"] == 1200 and b["optimizer_state"] == 2400


def test_optimizer_classes_and_what_the_planner_cannot_know():
    assert optimizer_key({"class": "Adam", "amsgrad": False}) == ("adam", None)
    assert optimizer_key({"class": "SGD", "momentum": 0.0}) == ("sgd", None)
    assert optimizer_key({"class": "PagedAdamW8bit"})[0] == "adam8bit"
    key, note = optimizer_key({"class": "Adafactor"})
    assert key is None and "Adafactor" in note
    assert "amsgrad" in optimizer_key({"class": "Adam", "amsgrad": True})[1]
    with pytest.raises(ValueError, match="no model"):
        live_model(())
    with pytest.raises(ValueError, match="inconsistent"):
        live_model([{"params": 10, "trainable": 20, "param_bytes": 40, "trainable_bytes": 40}])


@pytest.mark.slow
def test_the_planner_tab_takes_the_attached_process_as_its_model(attached, qapp, qtbot, artifacts_dir):
    from vramscope.core.units import GiB
    from vramscope.ui.qt import theme
    from vramscope.ui.planner.planner_tab import PlannerTab

    theme.apply(qapp)
    torch.manual_seed(0)
    model = TinyDecoder(TINY_LLAMA)
    adapters = add_lora(model, rank=4, modules=("q_proj", "v_proj"))
    opt = torch.optim.AdamW(adapters, lr=1e-3)
    report = attached(model, opt, lambda: train_step(model, opt, TINY_LLAMA["vocab_size"]))
    tab = PlannerTab(gpus=[("GPU 0: NVIDIA GeForce RTX 4090", 24 * GiB)])
    qtbot.addWidget(tab)
    tab.resize(1500, 1000)
    tab.show()
    qtbot.waitExposed(tab)
    tab.show_measured(report)
    tab.use_agent()
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.request.trainable_params is not None)
    live = live_model(report.models)
    assert tab.plan.request.shape.params == live.params
    assert tab.optimizer.currentData() == "adamw" and not tab.optimizer.isEnabled()
    assert not tab.precision.isEnabled() and not tab.lora_rank.isEnabled()
    assert "TinyDecoder" in tab.live_label.text() and "frozen" in tab.live_label.text()
    table = {
        tab.measured.item(r, 0).text().split(" (")[0]: tab.measured.item(r, 3).text()
        for r in range(tab.measured.rowCount())
    }
    assert table["weights"] == table["gradients"] == table["optimizer state"] == "exact"
    assert "like with like" in tab.measured_label.text()
    qtbot.wait(300)
    tab.grab().save(str(artifacts_dir / "planner_tab_live_agent.png"))
    # back to a count: the form's own choices again
    tab.source.setCurrentIndex(0)
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.request.trainable_params is None)
    assert tab.precision.isEnabled() and tab.optimizer.isEnabled()
