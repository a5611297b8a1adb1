"""The window as a user starts it -- its own sampler process sampling, the
agent's reports decoded from that process's stream -- shows the agents tab's
detail tabs: Modules for every agent that sends module figures, the allocator
segments of each GPU device. (The in-process demo drew them; through the
sampler process every frame raised until the stream's types held.)"""

from __future__ import annotations

import pytest

from user_path.helpers import window_args
from vramscope.core.agent_figures.module_figures import ModuleFigures
from vramscope.ui.agents.agent_panel import AgentProcessView
from vramscope.ui.window.app import build_window

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def shown_details(view: AgentProcessView) -> set[str]:
    tabs = view.details
    return {key for key, (_w, page) in tabs.pages.items() if tabs.isTabVisible(tabs.indexOf(page))}


@pytest.fixture
def window(themed_app, qtbot):
    feed, window = build_window(window_args(), poll_ms=100, sampler=True)
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    yield window
    window.services.close()


def test_the_agents_tab_shows_modules_and_segments_read_from_the_sampler_process(window, qtbot):
    assert window.feed.source.process is not None  # frames come from a sampler child, not this process
    agents = window.services.panels.agents
    window.tabs.setCurrentIndex(
        next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "PyTorch agents")
    )

    def trained():
        views = [v for v in agents.views.values() if isinstance(v, AgentProcessView)]
        return [v for v in views if "modules" in shown_details(v)]

    qtbot.waitUntil(lambda: bool(trained()), timeout=60_000)
    view = trained()[0]
    report = next(r for r in window.store.latest.agents if r.pid == view.sites.pid)
    assert report.modules and all(type(m) is ModuleFigures for m in report.modules)
    assert view.modules.tree.topLevelItemCount() > 0  # the module tree is drawn, not just listed
    qtbot.waitUntil(lambda: any(k.startswith("segments ") for k in shown_details(view)), timeout=60_000)
