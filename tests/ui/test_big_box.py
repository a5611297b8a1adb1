"""A big box (hundreds of processes per GPU): the table is built off the GUI
thread and still sorts, selects and filters as on a small one; the plots draw
the few processes that can be told apart and sum the rest."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from vramscope.core.processes.process_rows import COL
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.units import GiB, MiB
from vramscope.ui.qt.bridge import BUSY_PROCESSES
from vramscope.core.processes.stacking import LINE_CURVES
from vramscope.ui.timeline.timeline_stack import OTHERS

from .frames import T0

PER_GPU = 320  # 2 GPUs: 640 processes, over BUSY_PROCESSES


def _frame(k: int) -> Frame:
    gpus = []
    for g in range(2):
        procs = tuple(
            GpuProcess(
                pid=10_000 + g * 1000 + p,
                used=(64 + p) * MiB,
                sm=p % 100,
                info=ProcessInfo(
                    pid=10_000 + g * 1000 + p,
                    start_time=T0 - 600,
                    user=f"user{p % 40}",
                    name="python",
                    cmdline=("python", f"worker_{g}_{p}.py"),
                ),
            )
            for p in range(PER_GPU)
        )
        used = sum(p.used for p in procs)
        gpus.append(
            GpuSample(
                index=g,
                name="NVIDIA H100",
                uuid=f"GPU-{g}",
                total=80 * GiB,
                used=used,
                free=80 * GiB - used,
                processes=procs,
            )
        )
    return Frame(time=T0 + k, gpus=tuple(gpus), source="test")


def _settled(w, qtbot):
    qtbot.waitUntil(lambda: w.table.model.rowCount() == 2 * PER_GPU, timeout=10_000)
    assert w.table.builds.worker.wait_idle()
    qtbot.wait(20)


def test_a_busy_table_is_built_off_the_gui_thread_and_sorts_by_memory(make_window, qtbot):
    import threading

    assert 2 * PER_GPU >= BUSY_PROCESSES
    w = make_window([_frame(k) for k in range(30)], window="10m")
    _settled(w, qtbot)
    threads = []
    build = w.table.builder.build
    w.table.builder.build = lambda *a: (threads.append(threading.current_thread().name), build(*a))[1]
    mem = [r.used for r in w.table.model.rows]
    assert mem == sorted(mem, reverse=True) and mem[0] == (64 + PER_GPU - 1) * MiB
    w.table.view.sortByColumn(COL["PID"], Qt.SortOrder.AscendingOrder)  # a header click
    pids = w.table.visible_rows()
    assert pids == sorted(pids)
    key = w.table.model.rows[5].key
    w.table.select_key(key)
    w.feed.store.append(_frame(30))
    w.refresh(force=True)
    _settled(w, qtbot)
    assert threads == ["vramscope-table"]  # not the GUI thread
    assert w.table.selected_key == key  # survives the next frame built on the worker
    assert w.table.view.selectionModel().selectedRows()[0].row() == 5
    assert w.table.visible_rows() == sorted(w.table.visible_rows())  # the new frame keeps the order


@pytest.mark.slow
def test_a_busy_table_filters(make_window, qtbot):
    w = make_window([_frame(k) for k in range(5)], window="10m")
    _settled(w, qtbot)
    w.table.set_filter("WORKER_1_31")
    assert sorted(w.table.visible_rows()) == [11_031] + list(range(11_310, 11_320))
    w.table.set_filter("")
    assert w.table.model.rowCount() == 2 * PER_GPU


@pytest.mark.slow
def test_the_plots_draw_the_largest_and_sum_the_rest(make_window, qtbot):
    w = make_window([_frame(k) for k in range(30)], window="10m")
    _settled(w, qtbot)
    qtbot.waitUntil(
        lambda: (
            not w.gpu_panel._stale
            or all(not w.gpu_panel._in_view(w.gpu_panel.grid.rows[i]) for i in w.gpu_panel._stale)
        ),
        timeout=5000,
    )
    tl = w.gpu_panel.timelines[0]
    stack = tl.stack
    assert stack.order[-1] == OTHERS and len(stack.grouped) >= PER_GPU - 10
    top = stack._tops[-1, -1]
    assert abs(top - sum((64 + p) * MiB for p in range(PER_GPU))) < MiB  # every process counted
    w.gpu_panel.set_plot_style("lines")
    assert len(tl.lines.curves) == LINE_CURVES  # the largest; the table lists all
    largest = max(tl.lines.curves, key=lambda k: k[2])
    assert largest[2] == 10_000 + PER_GPU - 1


def test_forty_users_do_not_widen_the_window(make_window, qtbot):
    w = make_window([_frame(k) for k in range(3)], window="10m")
    _settled(w, qtbot)
    assert w.width() == 1400 and w.gpu_panel.timelines[0].width() < 1400
    text = w.table.notes.users.text()
    assert text.count(" GiB") == 6 and "+ 34 more users" in text
    assert w.table.notes.users.toolTip().count("\n") == 39  # every user, one per line


def _sixteen(k, used=None):
    from dataclasses import replace

    f = _frame(k)
    gpus = tuple(
        replace(f.gpus[g % 2], index=g, uuid=f"GPU-{g}", processes=f.gpus[g % 2].processes[:4])
        for g in range(16)
    )
    if used is not None:
        gpus = tuple(replace(g, used=used, free=80 * GiB - used, processes=()) for g in gpus)
    return replace(f, gpus=gpus)


def test_sixteen_gpus_hold_their_places_at_once_and_are_made_as_they_come_into_view(make_window, qtbot):
    w = make_window([], window="10m")
    for k in range(5):
        w.feed.store.append(_sixteen(k))
    w.refresh(force=True)
    panel = w.gpu_panel
    assert sorted(panel.grid.rows) == list(range(16))  # every row's place, at once
    assert len(panel.cards) <= 1  # made on the next turns of the event loop, one per turn
    qtbot.waitUntil(lambda: 1 in panel.cards and not panel._next_piece.isActive(), timeout=5000)
    bar = panel.verticalScrollBar()
    height = bar.maximum()
    assert height > 0 and 15 not in panel.cards  # out of view: not made yet
    assert panel.cards[1].used.text() != ""  # in view: filled in
    panel.set_markers({15: {("near_oom", 15): (T0 + 2, "WARNING", "near OOM")}})
    panel.ensureWidgetVisible(panel.grid.rows[15])  # scrolled to: made, filled in and drawn
    qtbot.waitUntil(lambda: 15 in panel.timelines and 15 not in panel._stale, timeout=5000)
    assert panel.cards[15].used.text() == panel.cards[1].used.text()
    assert panel.cards[15].heading.text() == "GPU 15"
    x, _y = panel.timelines[15].used_curve.getData()
    assert list(x) == [T0, T0 + 4]  # drawn: five flat seconds, from the first to the last
    assert panel.timelines[15].marker_times() == [T0 + 2]  # alerts marked before it was made
    assert bar.maximum() == height  # making rows moves nothing: the scroll range is as it was


def test_a_card_out_of_view_shows_the_latest_frame_when_scrolled_to(make_window, qtbot):
    w = make_window([_sixteen(0, 10 * GiB)], window="10m")
    panel = w.gpu_panel
    qtbot.waitUntil(lambda: 0 in panel.cards, timeout=5000)  # laid out, the first rows made
    panel.ensureWidgetVisible(panel.grid.rows[15])
    qtbot.waitUntil(lambda: 15 in panel.cards, timeout=5000)
    assert panel.cards[15].used.text().startswith("10.0")
    panel.ensureWidgetVisible(panel.grid.rows[0])
    qtbot.waitUntil(lambda: 0 in panel.cards, timeout=5000)
    w.feed.store.append(_sixteen(1, 30 * GiB))  # GPU 15 is out of view when this comes
    w.refresh(force=True)
    assert panel.cards[0].used.text().startswith("30.0")
    panel.ensureWidgetVisible(panel.grid.rows[15])
    assert panel.cards[15].used.text().startswith("30.0")
