"""Phases of each step: allocated at the end of forward, after backward, after the
optimizer step, and once after loading -- with a real CPU model and the replayed
allocator; never a CUDA synchronisation, never a reset of the user's peak counters."""

from __future__ import annotations

import json
import time

import pytest
import torch

from vramscope.sources.demo.allocator_replay import GiB, ReplayProvider, scenario_phases
from vramscope.agent.allocator.stats_cuda import TorchCudaProvider
from vramscope.core.samples import Frame
from vramscope.core.store.store import Store
from vramscope.sources.agents.agent_client import AgentClient


@pytest.fixture
def no_sync_no_reset(monkeypatch):
    """Any CUDA synchronisation or peak reset by the agent fails loudly (and is counted)."""
    calls = []

    def refuse(name):
        def fn(*a, **k):
            calls.append(name)
            raise AssertionError(f"the agent called torch.cuda.{name}")

        return fn

    for name in (
        "synchronize",
        "reset_peak_memory_stats",
        "reset_max_memory_allocated",
        "reset_accumulated_memory_stats",
        "empty_cache",
    ):
        monkeypatch.setattr(torch.cuda, name, refuse(name))
    return calls


def items(agent, kind=None):
    agent.serving.drain()
    out = [json.loads(b) for b in agent.ring.all_items()]
    return [i for i in out if kind is None or i["kind"] == kind]


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))


def train(model, opt, n, micro=1):
    for _ in range(n):
        opt.zero_grad()
        for _ in range(micro):
            model(torch.randn(8, 32)).pow(2).mean().backward()
        opt.step()


def started(make_agent, provider):
    """An agent whose sampler has taken its first sample and then waits (interval 60 s)."""
    agent = make_agent(provider, interval=60.0)
    agent.phases.budget = float("inf")  # every step measured (the budget has its own test)
    return agent


def wait_first_sample(agent):
    deadline = time.monotonic() + 5
    while agent.samples < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert agent.samples >= 1


def test_each_step_records_forward_backward_optimizer_in_order_and_forward_peaks(
    make_agent, no_sync_no_reset
):
    weights, activations = 2 * GiB, 8 * GiB
    frames, phases = scenario_phases(weights=weights, activations=activations, steps=4)
    agent = started(make_agent, ReplayProvider(frames, phase_frames=phases))
    model = mlp()
    opt = torch.optim.AdamW(model.parameters())
    agent.watch(model=model, optimizer=opt)
    agent.start()
    wait_first_sample(agent)
    train(model, opt, 4)
    steps = items(agent, "step")
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    for s in steps:
        assert s["phase_order"] == ["forward", "backward", "optimizer"]
        t = s["phase_times"]
        assert t["forward"] <= t["backward"] <= t["optimizer"] <= s["t"]
        p = s["phases"]["cuda:0"]
        # activations dominate: the end of forward is the largest phase, the update is below it
        assert p["forward"] > p["optimizer"] and p["forward"] > p["backward"]
        assert p["forward"] - p["optimizer"] >= activations - 4 * weights
    # the replay's figures arrive unchanged, in hook order (loaded, then 3 per step)
    assert [steps[1]["phases"]["cuda:0"][k] for k in ("forward", "backward", "optimizer")] == [
        phases[4][0],
        phases[5][0],
        phases[6][0],
    ]
    loaded = [e for e in items(agent, "event") if e["event"] == "loaded"]
    assert len(loaded) == 1 and loaded[0]["data"]["devices"] == {"cuda:0": weights}
    assert no_sync_no_reset == []
    assert agent.errors == 0 and agent.phases.errors == 0 and agent.steps.errors == 0


def test_gradient_accumulation_keeps_the_highest_reading_of_each_phase(make_agent):
    w = GiB
    # loaded, then one step of two micro-batches: fwd, bwd, fwd, bwd, then the update
    phases = [{0: w}, {0: 5 * w}, {0: 2 * w}, {0: 7 * w}, {0: 3 * w}, {0: 4 * w}]
    agent = started(make_agent, ReplayProvider(scenario_phases(steps=1)[0], phase_frames=phases))
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    agent.watch(model=model, optimizer=opt)
    agent.start()
    wait_first_sample(agent)
    train(model, opt, 1, micro=2)
    (step,) = items(agent, "step")
    assert step["phases"]["cuda:0"] == {"forward": 7 * w, "backward": 3 * w, "optimizer": 4 * w}


class NotATensorOutput(torch.nn.Module):
    """A model whose output autograd cannot be hooked from outside (a plain object)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(32, 4)

    def forward(self, x):
        return {"loss_parts": [self.lin(x).detach()], "value": self.lin(x).pow(2).mean().item()}, self.lin(x)


def test_without_a_hookable_output_backward_is_read_just_before_the_update(make_agent):
    frames, phases = scenario_phases(steps=2)
    agent = started(make_agent, ReplayProvider(frames, phase_frames=phases))
    model = NotATensorOutput()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    agent.watch(model=model, optimizer=opt)
    agent.start()
    wait_first_sample(agent)
    for _ in range(2):
        opt.zero_grad()
        _, out = model(torch.randn(8, 32))
        out.sum().backward()  # the tuple's tensor is hooked: the backward end is seen
        opt.step()
    assert [s["phase_order"] for s in items(agent, "step")] == [["forward", "backward", "optimizer"]] * 2

    class Opaque(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(32, 4)

        def forward(self, x):
            box = type("Box", (), {})()
            box.out = self.lin(x)  # no tensor the hooks can find
            return box

    frames, phases = scenario_phases(steps=1)
    agent2 = started(make_agent, ReplayProvider(frames, phase_frames=phases))
    model2 = Opaque()
    opt2 = torch.optim.SGD(model2.parameters(), lr=0.1)
    agent.stop()
    agent2.watch(model=model2, optimizer=opt2)
    agent2.start()
    wait_first_sample(agent2)
    opt2.zero_grad()
    model2(torch.randn(8, 32)).out.sum().backward()
    opt2.step()
    (step,) = items(agent2, "step")
    assert step["phase_order"] == ["forward", "backward", "optimizer"]
    assert step["phases"]["cuda:0"]["backward"] == phases[2][0]


def test_a_cpu_only_run_records_no_cuda_phases_and_costs_nothing(make_agent, no_sync_no_reset):
    agent = make_agent(TorchCudaProvider(), interval=60.0)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    agent.watch(model=model, optimizer=opt)
    agent.start()
    wait_first_sample(agent)
    before = [p.detach().clone() for p in model.parameters()]
    train(model, opt, 3)
    steps = items(agent, "step")
    assert len(steps) == 3
    assert all(s["phases"] is None and s["phase_order"] == [] for s in steps)
    loaded = [e for e in items(agent, "event") if e["event"] == "loaded"]
    assert loaded and loaded[0]["data"]["devices"] == {}
    assert agent.phases.reads <= 2  # no device: looked once, then not again within the recheck time
    assert not torch.cuda.is_initialized()  # the agent never created a CUDA context
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))  # training went on
    assert no_sync_no_reset == [] and agent.errors == 0


def test_when_readings_would_cost_too_much_only_every_kth_step_is_measured(make_agent):
    frames, phases = scenario_phases(steps=40)
    agent = make_agent(ReplayProvider(frames, phase_frames=phases), interval=60.0)
    agent.phases.budget = 1e-9  # any reading is too expensive for this budget
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    agent.watch(model=model, optimizer=opt)
    agent.start()
    wait_first_sample(agent)
    train(model, opt, 12)
    steps = items(agent, "step")
    measured = [s["step"] for s in steps if s["phases"] is not None]
    assert measured[:2] == [1, 2]  # measured until the cost is known
    assert len(measured) < len(steps) / 2  # then skipped to stay within the budget
    assert agent.phases.every > 1


def test_the_client_carries_phases_into_step_events_and_series(make_agent):
    frames, phases = scenario_phases(steps=3)
    agent = started(make_agent, ReplayProvider(frames, phase_frames=phases))
    model = mlp()
    opt = torch.optim.AdamW(model.parameters())
    agent.watch(model=model, optimizer=opt)
    agent.start()
    wait_first_sample(agent)
    train(model, opt, 3)
    agent.sample_once()
    store = Store()
    client = AgentClient(store=store)
    frame = client(Frame(time=time.time()))
    (report,) = [r for r in frame.agents if r.pid == agent.identity["pid"]]
    step_events = [e for e in report.events if e.kind == "step"]
    assert [e.data["phase_order"] for e in step_events] == [["forward", "backward", "optimizer"]] * 3
    assert step_events[-1].data["phases"]["cuda:0"]["forward"] == phases[7][0]
    assert [e.kind for e in report.recent_events].count("loaded") == 1
    key = ("agent", report.pid, report.start_time, "cuda:0", "phase_forward")
    _, values = store.series(key, 0.0)
    assert list(values) == [phases[1][0], phases[4][0], phases[7][0]]
    _, loaded = store.series(("agent", report.pid, report.start_time, "cuda:0", "phase_loaded"), 0.0)
    assert list(loaded) == [phases[0][0]]


@pytest.mark.slow
def test_the_agent_panel_marks_each_phase_and_says_which_one_peaks(make_agent, qtbot, artifacts_dir):
    pytest.importorskip("PySide6")
    from PySide6.QtWidgets import QApplication

    from vramscope.ui.qt import theme
    from vramscope.ui.agents.agent_panel import AgentPanel

    theme.apply(QApplication.instance())
    n = 25
    frames, phases = scenario_phases(weights=2 * GiB, activations=8 * GiB, steps=n)
    agent = make_agent(ReplayProvider(frames, phase_frames=phases), interval=0.05)
    agent.phases.budget = float("inf")  # every step measured
    model = mlp()
    opt = torch.optim.AdamW(model.parameters())
    agent.watch(model=model, optimizer=opt)
    agent.start()
    store = Store()
    client = AgentClient(store=store)
    for _ in range(n):
        train(model, opt, 1)
        time.sleep(0.03)
        frame = client(Frame(time=time.time()))
    agent.sample_once()
    frame = client(Frame(time=time.time()))
    (report,) = [r for r in frame.agents if r.pid == agent.identity["pid"]]
    panel = AgentPanel(store, window=4.0)
    qtbot.addWidget(panel)
    panel.resize(1300, 640)
    panel.show()
    panel.update_from(frame)
    qtbot.wait(50)
    dev = panel.views[report.identity].devices["cuda:0"]
    xs, ys = dev.phase_marks["forward"].getData()
    assert len(xs) == n and ys.max() == pytest.approx((2 * 2 + 4 + 8), rel=1e-6)  # GiB: w + g + Adam + acts
    assert len(dev.phase_marks["optimizer"].getData()[0]) == n
    text = dev.phase_label.text()
    # a replayed allocator without its all-time peak: no phase peaks, and the highest
    # end-of-phase reading is not called the step's peak
    assert dev.phase_label.isVisible() and "Highest phase end: end of forward" in text
    assert "Step peak" not in text and "is not read here" in text
    assert "after loading 2.0 GiB" in text and "activations dominate" in text
    assert "Phases read on 100% of steps" in text
    assert dev.bars.columns[0][0] == "fwd end"
    assert dev.loaded_line.isVisible() and dev.loaded_line.value() == pytest.approx(2.0)
    panel.grab().save(str(artifacts_dir / "agent_panel_phases.png"))


def test_one_slow_reading_does_not_switch_the_phases_off_and_the_share_is_reported():
    """The budget is the training thread's CPU time of the readings, held by the median
    of the last measured steps: a reading that once costs 5 ms of CPU (a page fault, a
    cold cache) on a 2 ms step skips at most a step, and the share of steps measured
    is what the monitor is told."""
    from vramscope.agent.steps.phases import PhaseTracker

    slow = {"left": 1}

    def read():
        if slow["left"]:
            slow["left"] -= 1
            end = time.thread_time() + 0.005
            while time.thread_time() < end:
                pass
        return {0: 1}

    clock = [0.0]
    tracker = PhaseTracker(read, lambda kind, data: None, clock=lambda: clock[0], budget=0.05)
    measured = 0
    for _ in range(100):
        if tracker.enabled:
            tracker.forward_end(None)
            tracker.optimizer_pre()
            tracker.optimizer_post()
        clock[0] += 0.002
        measured += bool(tracker.take(clock[0], 0.002))
    assert measured >= 95
    assert tracker.measured_share == measured / 100


def test_an_evaluation_under_no_grad_is_not_folded_into_the_next_steps_forward(make_agent):
    """Between two training steps the script evaluates a big batch under ``no_grad``:
    the next step's "forward" reading is its own training forward, not the evaluation."""
    from tests.agent.live_bytes import LiveBytes, LiveBytesProvider

    live = LiveBytes()
    with live:
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        agent = started(make_agent, LiveBytesProvider(live))
        agent.watch(model=model, optimizer=opt)
        agent.start()
        wait_first_sample(agent)
        for _ in range(4):
            opt.zero_grad()
            model(torch.randn(8, 32)).pow(2).mean().backward()
            opt.step()
            with torch.no_grad():
                held = model(torch.randn(32768, 32))  # 512 kB of output at its forward end
            del held
    forwards = [s["phases"]["cpu"]["forward"] for s in items(agent, "step") if s.get("phases")]
    assert len(forwards) >= 3
    assert max(forwards) < min(forwards) + 256 * 1024  # never the evaluation
