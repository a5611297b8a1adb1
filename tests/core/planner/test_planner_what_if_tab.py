"""The planner tab's attached-process source on the busy machine: the measured run
scaled to the form's micro-batch, part by part, judged against the GPU's capacity
and what is free now; screenshots at 1400x900 and 1024x700."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from test_planner_tab_busy import _planner, _right_in, busy_planner  # noqa: E402,F401


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_what_would_fit_from_the_attached_process(busy_planner, qtbot, artifacts_dir, size):  # noqa: F811
    window, _ = busy_planner(*size)
    tab = _planner(window)
    tab.use_agent()
    tab.batch.setValue(16)  # the demo runs train at micro-batch 8
    view = tab.what_if
    qtbot.waitUntil(lambda: view.result is not None and view.result.change.batch == 16, timeout=3000)
    w = view.result
    assert view.isVisible()
    acts = {p.name: p for p in w.parts}["activations"]
    assert acts.predicted == 2 * acts.now and acts.scales == "batch x seq"
    assert {p.name: p for p in w.parts}["weights"].predicted == {p.name: p for p in w.parts}["weights"].now
    assert w.peak > w.peak_now
    # judged against the capacity and the memory free now, both said
    # judged on the GPU the process is on, where what it holds would be free again
    assert len(w.targets) == 1 and w.targets[0].capacity and w.targets[0].own
    assert "free now (with the" in view.verdicts.text() and "in its" in view.verdicts.text()
    assert "micro-batch 8" in view.label.text() and "micro-batch 16" in view.label.text()
    from PySide6.QtWidgets import QScrollArea

    page = tab.results.parentWidget()
    while not isinstance(page, QScrollArea):
        page = page.parentWidget()
    page.ensureWidgetVisible(view.table, 0, 300)
    qtbot.wait(50)
    assert _right_in(window, view.table) <= _right_in(window, tab.results.parentWidget()) + 1
    window.grab().save(str(artifacts_dir / f"planner-what-if-{size[0]}x{size[1]}.png"))
    # another source: the measured run is not this plan's model
    tab.form.model_source.select_source("params")
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)
