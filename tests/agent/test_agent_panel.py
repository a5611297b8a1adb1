"""The agent panel over a real pipeline: an in-process agent (real CPU model,
replayed CUDA statistics: ramp, fragmentation, OOM), the monitor's client,
the store, the widget. Screenshots go to test-artifacts/."""

from __future__ import annotations

import time

import pytest
import torch

pytest.importorskip("PySide6")

from vramscope.sources.demo import allocator_replay as replay  # noqa: E402
from vramscope.sources.demo.allocator_replay import GiB, ReplayProvider  # noqa: E402
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo  # noqa: E402
from vramscope.core.store.store import Store  # noqa: E402
from vramscope.sources.agents.agent_reports import record_reports  # noqa: E402
from vramscope.sources.agents.agent_client import AgentClient  # noqa: E402


def _training_run(make_agent):
    frames = (
        replay.scenario_ramp(weights=2 * GiB, steps=25)
        + replay.scenario_fragmentation(steps=15)
        + replay.scenario_oom()
    )
    agent = make_agent(ReplayProvider(frames), interval=0.05)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
    opt = torch.optim.Adam(model.parameters())
    agent.watch(model=model, optimizer=opt)
    agent.start()
    assert agent.wait_started(5)
    return agent, model, opt, len(frames)


@pytest.mark.slow
def test_panel_shows_allocated_reserved_buckets_steps_and_the_oom(qtbot, make_agent, artifacts_dir):
    import psutil
    from PySide6.QtWidgets import QApplication

    from vramscope.ui.qt import theme
    from vramscope.ui.agents.agent_panel import AgentPanel

    theme.apply(QApplication.instance())
    agent, model, opt, n = _training_run(make_agent)
    store = Store()
    client = AgentClient(store=store)
    me = GpuProcess(
        pid=agent.identity["pid"],
        used=24 * GiB - 100 * (1 << 20),
        info=ProcessInfo(pid=agent.identity["pid"], start_time=psutil.Process().create_time()),
    )
    gpu = GpuSample(index=0, uuid="GPU-replay-0000", total=24 * GiB, used=me.used, processes=(me,))
    deadline = time.monotonic() + 30
    frame = None
    while time.monotonic() < deadline:
        opt.zero_grad()
        model(torch.randn(64, 256)).sum().backward()
        opt.step()
        time.sleep(0.02)
        frame = client(Frame(time=time.time(), gpus=(gpu,)))
        if (
            frame.agents
            and any(e.kind == "oom" for e in frame.agents[0].recent_events)
            and agent.reader.provider.index >= n - 1
            and agent.steps.count > 8
        ):
            break
    report = frame.agents[0]
    assert any(e.kind == "oom" for e in report.recent_events)
    panel = AgentPanel(store, window=8.0)
    qtbot.addWidget(panel)
    panel.resize(1300, 720)
    panel.show()
    panel.update_from(frame)
    qtbot.wait(50)
    view = panel.views[report.identity]
    dev = view.devices["cuda:0"]
    assert "OOM" in dev.oom_label.text() and dev.oom_label.isVisible()
    assert [t for t, _ in dev.bars.columns][1:] == ["at OOM"]  # beside the peak phase (or latest)
    assert len(dev._oom_lines) == 1
    assert len(dev.steps.data) > 5  # step ticks
    xs, ys = dev.allocated.getData()
    assert len(xs) > 10 and ys.max() > 8  # GiB: the replay's ramp reached fixed + activations
    assert "expandable_segments: off" in view.settings.text()
    # the real model's weights/grads/Adam state are on the CPU: said in words, not drawn
    assert "cpu" not in view.devices
    assert "part of the model is on the CPU" in view.notes.text() and "of weights" in view.notes.text()
    panel.grab().save(str(artifacts_dir / "agent_panel_replay.png"))


def test_panel_over_the_demo_source(qtbot, artifacts_dir):
    from PySide6.QtWidgets import QApplication

    from vramscope.sources.demo.simulated import SimulatedSource
    from vramscope.ui.qt import theme
    from vramscope.ui.agents.agent_panel import AgentPanel

    theme.apply(QApplication.instance())
    src = SimulatedSource(seed=1)
    store = Store()
    t0 = 1_800_000_000.0
    frame = None
    for k in range(0, 240):
        frame = record_reports(store, src.sample(t0 + k))
    panel = AgentPanel(store, window=240.0)
    qtbot.addWidget(panel)
    panel.resize(1300, 900)
    panel.show()
    panel.update_from(frame)
    qtbot.wait(50)
    assert len(panel.views) == len(frame.agents) >= 1
    assert not panel.empty.isVisible()
    panel.grab().save(str(artifacts_dir / "agent_panel_demo.png"))
    panel.update_from(Frame(time=t0 + 300))
    assert panel.empty.isVisible() and not panel.views
