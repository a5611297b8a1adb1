"""The main window over hand-built frames: what an ML engineer sees."""

from __future__ import annotations

import pytest

from vramscope.core.store.store import gpu_key, proc_key
from vramscope.core.units import GiB
from vramscope.ui.processes.process_model import AGENT_MARK

from .frames import T0, NoDriverSource, ScriptedSource, frame_at
from .helpers import drawn_through, same_series, save, table_cell, table_column


def test_a_card_per_gpu_with_name_and_used_total(make_window, scripted_frames):
    w = make_window(scripted_frames)
    cards = w.gpu_panel.cards
    assert sorted(cards) == [0, 1]
    assert cards[0].name_text == "NVIDIA GeForce RTX 4090"
    assert cards[0].used.text() == "21.5 / 24.0 GiB"  # 18 + 3 + 0.5 GiB at k=119
    assert cards[0].values["temperature"].text() == "71 °C"
    assert cards[0].values["power"].text() == "320 / 450 W"
    assert cards[1].name_text == "NVIDIA RTX A6000"
    assert cards[1].used.text() == "5.0 / 48.0 GiB"
    # not reported by this GPU: n/a, never 0
    assert cards[1].values["reserved"].text() == "n/a"
    assert cards[1].values["temperature"].text() == "n/a"
    assert not cards[0].error.isVisible()


def test_table_has_a_row_per_process_with_na_and_visibility(make_window, scripted_frames):
    w = make_window(scripted_frames)
    assert sorted(int(p) for p in table_column(w, "PID")) == [777, 888, 3131, 4242]
    # sorted by memory, largest first; n/a last
    assert [int(p) for p in table_column(w, "PID")] == [4242, 3131, 888, 777]
    assert table_cell(w, 777, "Memory") == "n/a"
    assert table_cell(w, 4242, "Memory") == "18.00 GiB"
    assert table_cell(w, 777, "User") == "not visible"
    assert "another PID namespace" in table_cell(w, 777, "Command")
    assert table_cell(w, 888, "User") == "access denied"
    assert table_cell(w, 4242, "Agent") == AGENT_MARK
    assert table_cell(w, 3131, "Agent") == ""
    assert table_cell(w, 3131, "Age") == "6 h 01 min"
    assert "ipykernel_launcher" in table_cell(w, 3131, "Command")
    assert table_cell(w, 777, "SM %") == "n/a"


def test_table_sorts_by_a_clicked_column(make_window, scripted_frames, qtbot):
    from PySide6.QtCore import Qt
    from vramscope.ui.processes.process_model import COL

    w = make_window(scripted_frames)
    w.table.view.sortByColumn(COL["PID"], Qt.SortOrder.AscendingOrder)
    assert [int(p) for p in table_column(w, "PID")] == [777, 888, 3131, 4242]
    w.table.view.sortByColumn(COL["Memory"], Qt.SortOrder.AscendingOrder)
    assert table_column(w, "Memory")[0] == "n/a"  # n/a sorts below every figure


@pytest.mark.parametrize("window", ["1m", "all"])
def test_curves_are_the_store_series(make_window, scripted_frames, window):
    w = make_window(scripted_frames, window=window)
    w.gpu_panel.set_plot_style("lines")  # this test reads the per-process lines
    store = w.store
    now = scripted_frames[-1].time
    since = None if window == "all" else now - 60
    for index, tl in w.gpu_panel.timelines.items():
        x, y = tl.used_curve.getData()
        t, v = store.series(gpu_key(index, "used"), since)
        assert drawn_through(x, y * GiB, t, v)
        x, y = tl.capacity_curve.getData()
        assert drawn_through(x, y * GiB, *store.series(gpu_key(index, "total"), since))
        assert len(x) == 2  # a flat capacity: its two ends, not a point per sample
        for key in store.process_keys(index):
            t, v = store.series(key, since)
            curve = tl.lines.curves.get(key)
            if curve is None:  # nothing but n/a inside the window: not drawn (never as 0)
                inside = v if since is None else v[t >= since]
                assert not (inside == inside).any()
                continue
            x, y = curve.getData()
            assert drawn_through(x, y * GiB, t, v)
    tl0 = w.gpu_panel.timelines[0]
    job = proc_key(0, 5555, T0 + 20)
    if window == "all":  # the short job (k 20..49) is in the window, marked as ended
        assert tl0.lines.curves[job].isVisible()
        assert "eval.py (5555) · ended" in tl0.legend.names()
    else:
        assert job not in tl0.lines.curves or not tl0.lines.curves[job].isVisible()
    assert "train.py (4242)" in tl0.legend.names()
    assert "Jupyter kernel (3131)" in tl0.legend.names()
    # the n/a process is named beside the plot, not drawn as a zero line
    assert proc_key(1, 777, None) not in w.gpu_panel.timelines[1].lines.curves


def test_process_keeps_its_colour_in_table_and_plot(make_window, scripted_frames):
    w = make_window(scripted_frames)
    w.gpu_panel.set_plot_style("lines")  # this test reads the per-process lines
    ident = (4242, T0 - 3600)
    colour = w.colours.colour(ident)
    pen = w.gpu_panel.timelines[0].lines.curves[proc_key(0, 4242, T0 - 3600)].opts["pen"]
    assert pen.color().name() == colour.lower()
    w.feed.store.append(frame_at(120))
    w.refresh()
    assert w.colours.colour(ident) == colour
    others = {
        w.colours.colour(p.identity)
        for _g, p in frame_at(120).all_processes()
        if p.pid != 4242 and p.info.start_time
    }
    assert colour not in others


def test_selecting_a_row_highlights_its_curve(make_window, scripted_frames, qtbot, artifacts_dir):
    w = make_window(scripted_frames)
    w.gpu_panel.set_plot_style("lines")  # this test reads the per-process lines
    kernel = proc_key(0, 3131, T0 - 6 * 3600)
    train = proc_key(0, 4242, T0 - 3600)
    row = w.table.display_row_of(kernel)
    w.table.view.selectRow(row)
    tl = w.gpu_panel.timelines[0]
    assert w.table.selected_key == kernel
    assert tl.lines.width(kernel) > tl.lines.width(train)
    assert tl.lines.curves[train].opts["pen"].color().alpha() < 255
    # the selection survives new frames and re-sorting
    w.feed.store.append(frame_at(120))
    w.refresh()
    assert w.table.selected_key == kernel
    assert tl.lines.width(kernel) > tl.lines.width(train)
    save(w, artifacts_dir, "main-window-selected-row.png")
    w.table.view.clearSelection()
    assert tl.lines.width(kernel) == tl.lines.width(train)
    assert tl.lines.curves[train].opts["pen"].color().alpha() == 255


def test_pause_freezes_the_view_while_frames_keep_arriving(make_window):
    w = make_window([frame_at(k) for k in range(30)])
    card = w.gpu_panel.cards[0]
    before_text = card.used.text()
    before_x = w.gpu_panel.timelines[0].used_curve.getData()[0].copy()
    w.set_paused(True)
    version = w.store.version
    for k in range(30, 60):  # the training run ramps up meanwhile
        w.feed.store.append(frame_at(k))
    w.refresh()
    assert w.store.version == version + 30  # data kept coming
    assert card.used.text() == before_text
    assert same_series(w.gpu_panel.timelines[0].used_curve.getData()[0], before_x)
    assert "PAUSED" in w.status_text.text()
    w.set_paused(False)
    assert card.used.text() != before_text
    assert w.gpu_panel.timelines[0].used_curve.getData()[0][-1] == frame_at(59).time  # caught up


def test_sampler_keeps_sampling_while_paused(make_window, qtbot):
    w = make_window()
    w.feed.sampler.interval = 0.1
    w.feed.start()
    qtbot.waitUntil(lambda: w.store.version >= 2, timeout=5000)
    w.refresh()
    w.set_paused(True)
    shown = w.gpu_panel.timelines[0].used_curve.getData()[0].copy()
    version = w.store.version
    qtbot.waitUntil(lambda: w.store.version >= version + 3, timeout=5000)
    w.refresh()
    assert same_series(w.gpu_panel.timelines[0].used_curve.getData()[0], shown)


@pytest.mark.parametrize("key, seconds", [("1m", 60), ("10m", 600), ("1h", 3600)])
def test_time_window_sets_the_x_range(make_window, scripted_frames, key, seconds):
    w = make_window(scripted_frames, window="all")
    now = scripted_frames[-1].time
    x0, x1 = w.gpu_panel.timelines[0].x_range()
    assert x0 == pytest.approx(T0) and x1 == pytest.approx(now)  # "all": the whole session
    w.controls.window_actions[key].trigger()  # the toolbar button
    for tl in w.gpu_panel.timelines.values():
        x0, x1 = tl.x_range()
        assert x1 == pytest.approx(now)
        # a session younger than the window fills the plot (at least a minute), then scrolls
        assert x1 - x0 == pytest.approx(max(60.0, min(seconds, now - T0)))
        assert not tl.plot.getViewBox().autoRangeEnabled()[0]  # the app drives x


def test_no_driver_message_then_the_demo_without_restart(make_window, qtbot, artifacts_dir):
    src = NoDriverSource()
    w = make_window([src.sample(T0)], source=src)
    assert w.pages.currentWidget() is w.no_driver
    assert w.no_driver.title.text() == "No NVIDIA driver found"
    assert NoDriverSource.MESSAGE in w.no_driver.detail.text()
    assert w.no_driver.demo_button.isVisible()
    assert not w.banner.isVisible()
    # nothing to sample: the status line does not pretend, the plot controls are off
    assert "sampling every" not in w.status_text.text()
    assert "no GPU to sample" in w.status_text.text()
    assert not w.controls.pause_action.isEnabled() and not w.controls.style_actions["stacked"].isEnabled()
    save(w, artifacts_dir, "main-window-no-driver.png")

    from PySide6.QtCore import Qt

    qtbot.mouseClick(w.no_driver.demo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: w.pages.currentWidget() is w.splitter, timeout=10000)
    assert w.feed.simulated
    assert w.banner.isVisible() and "Simulated data — demo mode" in w.banner.text()
    assert [c.name_text for c in w.gpu_panel.cards.values()] == [g.name for g in w.store.latest.gpus]
    assert w.controls.pause_action.isEnabled() and "sampling every" in w.status_text.text()


def test_a_lost_gpu_is_shown_while_the_other_updates(make_window, artifacts_dir):
    frames = [frame_at(k) for k in range(30)] + [frame_at(k, lost_gpu1=True) for k in range(30, 40)]
    w = make_window(frames)
    lost = w.gpu_panel.cards[1]
    assert lost.error.isVisible() and lost.error.text() == "GPU is lost"
    assert lost.property("state") == "error"
    assert lost.used.text() == "n/a / n/a GiB"
    assert [int(p) for p in table_column(w, "PID")] == [4242, 3131, 5555]
    save(w, artifacts_dir, "main-window-lost-gpu.png")
    before = w.gpu_panel.cards[0].used.text()
    for k in range(40, 60):
        w.feed.store.append(frame_at(k, lost_gpu1=True))
    w.refresh()
    assert w.gpu_panel.cards[0].used.text() != before  # GPU 0 keeps updating
    assert not w.gpu_panel.cards[0].error.isVisible()
    assert w.gpu_panel.cards[1].error.text() == "GPU is lost"


def test_panels_from_other_modules_join_as_tabs_or_docks(make_window):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget, QLabel

    w = make_window([frame_at(0)])
    w.add_panel("Alerts", QLabel("alerts"))
    assert [w.tabs.tabText(i) for i in range(w.tabs.count())] == ["Monitor", "Alerts"]
    dock = w.add_panel("Agent", QLabel("agent"), dock=Qt.DockWidgetArea.RightDockWidgetArea)
    assert isinstance(dock, QDockWidget) and dock.windowTitle() == "Agent"
    assert [a.text() for a in w.file_menu.actions()][-1] == "&Quit"


def test_new_frame_signal_reaches_panels_even_when_paused(make_window, qtbot):
    w = make_window([frame_at(0)])
    seen = []
    w.new_frame.connect(seen.append)
    w.set_paused(True)
    w.feed.store.append(frame_at(1))
    w.refresh()
    assert [f.time for f in seen] == [T0 + 1]


def test_closing_the_feed_closes_the_source(make_window):
    src = ScriptedSource()
    w = make_window([frame_at(0)], source=src)
    w.feed.close()
    assert src.closed


def test_a_plot_that_moves_on_is_painted_once_with_its_alert_marker(make_window, qtbot):
    """The marker's label follows the new time axis before the paint (it once
    moved during the paint and asked for a second paint of the plot)."""
    from PySide6.QtCore import QEvent, QObject

    from .frames import T0, frame_at

    w = make_window([frame_at(k) for k in range(60, 90)], window="1m")
    tl = w.gpu_panel.timelines[0]
    tl.set_markers({("near_oom", 0): (T0 + 70, "WARNING", "Near OOM")})
    w.refresh(force=True)
    qtbot.wait(50)
    paints = []

    class Count(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint:
                paints.append(event.rect())
            return False

    counter = Count()
    tl.viewport().installEventFilter(counter)
    for k in range(90, 95):  # steady figures; the axis (and the marker) move on
        w.feed.store.append(frame_at(k))
        w.refresh(force=True)
        qtbot.wait(30)
    assert len(paints) == 5
