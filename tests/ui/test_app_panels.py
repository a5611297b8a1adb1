"""The assembled window: diagnostics, agent panel and planner wired to the demo."""

from __future__ import annotations

import argparse

import pytest

from vramscope.sources.demo.simulated import SimulatedSource
from vramscope.ui.window.app import build_window

from .helpers import save

T0 = 1_800_000_000.0


@pytest.fixture
def demo_window(themed_app, qtbot):
    args = argparse.Namespace(
        demo=True, interval=1.0, window="10m", record=False, read_only=False, prometheus=None, file=None
    )
    source = SimulatedSource(seed=1, start_time=T0)
    feed, window = build_window(args, source=source, start=False, poll_ms=60_000)
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    enrich = feed.sampler.enrichers

    def run_until(seconds: float):
        t = T0 + run_until.t
        while t <= T0 + seconds:
            frame = source.sample(t)
            for e in enrich:
                frame = e(frame)
            feed.store.append(frame)  # the diagnostics engine listens here
            t += 1.0
        run_until.t = t - T0
        window.refresh(force=True)
        qtbot.wait(10)

    run_until.t = 0.0
    yield window, run_until
    window.services.close()


def _tab(window, prefix):
    for i in range(window.tabs.count()):
        if window.tabs.tabText(i).startswith(prefix):
            return i
    raise AssertionError(f"no tab {prefix!r}: {[window.tabs.tabText(i) for i in range(window.tabs.count())]}")


@pytest.mark.slow
def test_demo_flags_the_kernel_the_leak_and_fragmentation(demo_window, artifacts_dir):
    window, run_until = demo_window
    run_until(610)  # the kernel is listed 10 min after its last execution
    panels = window.services.panels
    kinds = {(a.kind, a.pid) for a in panels.alerts.alerts()}
    assert ("squatter", 49718) in kinds  # the idle Jupyter kernel
    assert any(k == "leak" for k, _ in kinds)
    assert any(k == "fragmentation" for k, _ in kinds)
    # the tab says how many, the timelines carry a marker per alert on their GPU
    assert window.tabs.tabText(_tab(window, "Alerts")) == f"Alerts ({len(panels.alerts.alerts())})"
    marked = sum(len(t.marker_times()) for t in window.gpu_panel.timelines.values())
    assert marked == sum(1 for a in panels.alerts.alerts() if a.gpu is not None and a.since is not None)
    save(window, artifacts_dir, "app-monitor-with-markers.png")
    window.tabs.setCurrentIndex(_tab(window, "Alerts"))
    save(window, artifacts_dir, "app-alerts-tab.png")


@pytest.mark.slow
def test_agent_panel_and_planner_follow_the_demo(demo_window, artifacts_dir):
    window, run_until = demo_window
    run_until(120)
    panels = window.services.panels
    assert not panels.agents.views  # a hidden tab does no work
    window.tabs.setCurrentIndex(_tab(window, "PyTorch agents"))
    assert len(panels.agents.views) == 2  # train.py and finetune.py run the agent
    save(window, artifacts_dir, "app-agents-tab.png")
    window.tabs.setCurrentIndex(_tab(window, "Planner"))
    save(window, artifacts_dir, "app-planner-tab.png")


def test_end_process_is_not_offered_on_simulated_data(demo_window):
    window, run_until = demo_window
    run_until(90)
    alerts = window.services.panels.alerts
    assert alerts.alerts()
    alerts.tree.setCurrentItem(alerts.tree.topLevelItem(0))
    assert not alerts.buttons.end_button.isEnabled()
