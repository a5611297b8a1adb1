"""The Planner tab inside the window on the busy machine (``--demo --busy``: 16
processes on two GPUs): judged against what is free now, inputs above the fold
at 1400x900, every result column visible at 1024x700; screenshots at both."""

from __future__ import annotations

import argparse

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint  # noqa: E402

from planner_configs import CONFIGS  # noqa: E402

from vramscope.sources.demo.busy_demo import BusyWorkstation  # noqa: E402
from vramscope.ui.window.app import build_window  # noqa: E402
from vramscope.core.settings.user_settings import Settings  # noqa: E402

T0 = 1_800_000_000.0


@pytest.fixture
def busy_planner(qapp, qtbot, tmp_path):
    from vramscope.ui.qt import theme

    theme.apply(qapp)
    made = []

    def make(width, height):
        args = argparse.Namespace(
            demo=True,
            interval=1.0,
            window="10m",
            record=False,
            read_only=False,
            prometheus=None,
            file=None,
            theme=None,
        )
        settings = Settings(str(tmp_path / "s.toml"))
        settings.merge_args(args)
        feed, window = build_window(
            args,
            source=BusyWorkstation(seed=1, start_time=T0),
            start=False,
            poll_ms=60_000,
            settings=settings,
        )
        qtbot.addWidget(window)
        made.append(window)
        window.resize(width, height)
        window.show()
        for k in range(180):  # three minutes of the busy machine
            feed.sampler.sample_once(T0 + k)
        index = next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "Planner")
        window.tabs.setCurrentIndex(index)
        window.refresh(force=True)
        qtbot.wait(50)
        tab = window.panels.planner if hasattr(window, "panels") else None
        return window, tab

    yield make
    for w in made:
        w.services.close()


def _planner(window):
    from vramscope.ui.planner.planner_tab import PlannerTab

    return window.findChild(PlannerTab)


def _bottom_in(window, widget) -> int:
    return widget.mapTo(window, QPoint(0, widget.height())).y()


def _right_in(window, widget) -> int:
    return widget.mapTo(window, QPoint(widget.width(), 0)).x()


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_the_planner_on_the_busy_machine(busy_planner, qtbot, artifacts_dir, size):
    window, _ = busy_planner(*size)
    tab = _planner(window)
    qtbot.waitUntil(lambda: bool(tab.plan is not None and tab.plan.gpus))
    tab.load_config(str(CONFIGS / "llama-2-7b.json"))
    tab.mode.setCurrentIndex(tab.mode.findData("infer"))
    tab.context.setValue(8192)
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.mode == "infer", timeout=2000)
    qtbot.wait(50)
    window.grab().save(str(artifacts_dir / f"planner-busy-{size[0]}x{size[1]}.png"))
    assert all(g.free is not None for g in tab.plan.gpus)  # judged against free memory too
    # every column of the result tables inside the visible page
    page = tab.results.parentWidget().parentWidget()  # the scroll area's viewport
    for table in (tab.gpu_table, tab.buckets, tab.measured):
        assert _right_in(window, table) <= _right_in(window, page) + 1, table
    # training: the inputs stay above the fold at 1400x900
    tab.mode.setCurrentIndex(tab.mode.findData("train"))
    tab.batch.setValue(4)
    tab.seq.setValue(4096)
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.mode == "train", timeout=2000)
    qtbot.wait(50)
    window.grab().save(str(artifacts_dir / f"planner-busy-train-{size[0]}x{size[1]}.png"))
    if size == (1400, 900):
        form_page = tab.form.parentWidget().parentWidget()
        assert _bottom_in(window, tab.flash) <= _bottom_in(window, form_page)


def test_free_memory_that_barely_moves_does_not_replan(qapp, qtbot):
    from vramscope.core.planner.request import GpuNow
    from vramscope.core.units import GiB, MiB
    from vramscope.ui.planner.planner_tab import PlannerTab

    tab = PlannerTab()
    qtbot.addWidget(tab)
    gpus = [("GPU 0", 24 * GiB)]
    tab.set_gpus(gpus, (GpuNow("GPU 0", 10 * GiB),))
    qtbot.waitUntil(lambda: bool(tab.plan and tab.plan.gpus and tab.plan.gpus[0].free))
    first = tab.plan
    tab.set_gpus(gpus, (GpuNow("GPU 0", 10 * GiB + 10 * MiB),))  # a sample's jitter
    qtbot.wait(30)
    assert tab.plan is first
    tab.set_gpus(gpus, (GpuNow("GPU 0", 2 * GiB, (("train.py (7)", 21 * GiB),)),))
    qtbot.waitUntil(lambda: tab.plan.gpus[0].free == 2 * GiB)
    assert "train.py (7) holds 21.00 GiB" in tab.gpu_table.item(0, 3).text()
