"""The Alerts tab on the busy machine: the most urgent first, what is watched
listed below the alerts; screenshots at 1400x900 and 1024x700."""

from __future__ import annotations

import pytest

from vramscope.core.detectors.alert import urgency_key

from .helpers import save


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_alerts_tab_lists_by_urgency_then_what_it_watches(busy, artifacts_dir, size):
    w = busy(*size)
    panel = w.services.panels.alerts
    w.tabs.setCurrentWidget(panel)
    panel.refresh()
    alerts = panel.alerts()
    assert alerts, "the busy machine raises alerts"
    assert [urgency_key(a) for a in alerts] == sorted(urgency_key(a) for a in alerts)
    kinds = [a.kind for a in alerts]
    if "squatter" in kinds and "growth" in kinds:
        assert kinds.index("growth") < kinds.index("squatter")  # idle holders below
    rows = panel.tree.topLevelItemCount()
    assert rows == len(alerts) + len(panel.tree.watching())
    for i in range(len(alerts), rows):
        assert panel.tree.topLevelItem(i).text(0) == "watching"
    save(w, artifacts_dir, f"busy-alerts-{size[0]}x{size[1]}.png")
