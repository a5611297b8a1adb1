"""A big box (hundreds of processes per GPU): the table is built off the GUI
thread and still sorts, selects and filters as on a small one; the plots draw
the few processes that can be told apart and sum the rest."""

from __future__ import annotations

from PySide6.QtCore import Qt

from vramscope.core.process_rows import COL
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.units import GiB, MiB
from vramscope.ui.bridge import BUSY_PROCESSES
from vramscope.core.stacking import LINE_CURVES
from vramscope.ui.timeline_stack import OTHERS

from .frames import T0

PER_GPU = 320  # 2 GPUs: 640 processes, over BUSY_PROCESSES


def _frame(k: int) -> Frame:
    gpus = []
    for g in range(2):
        procs = tuple(
            GpuProcess(pid=10_000 + g * 1000 + p, used=(64 + p) * MiB, sm=p % 100,
                       info=ProcessInfo(pid=10_000 + g * 1000 + p, start_time=T0 - 600,
                                        user=f"user{p % 40}", name="python",
                                        cmdline=("python", f"worker_{g}_{p}.py")))
            for p in range(PER_GPU))
        used = sum(p.used for p in procs)
        gpus.append(GpuSample(index=g, name="NVIDIA H100", uuid=f"GPU-{g}", total=80 * GiB,
                              used=used, free=80 * GiB - used, processes=procs))
    return Frame(time=T0 + k, gpus=tuple(gpus), source="test")


def _settled(w, qtbot):
    qtbot.waitUntil(lambda: w.table.model.rowCount() == 2 * PER_GPU, timeout=10_000)
    assert w.table.worker.wait_idle()
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


def test_a_busy_table_filters(make_window, qtbot):
    w = make_window([_frame(k) for k in range(5)], window="10m")
    _settled(w, qtbot)
    w.table.set_filter("WORKER_1_31")
    assert sorted(w.table.visible_rows()) == [11_031] + list(range(11_310, 11_320))
    w.table.set_filter("")
    assert w.table.model.rowCount() == 2 * PER_GPU


def test_the_plots_draw_the_largest_and_sum_the_rest(make_window, qtbot):
    w = make_window([_frame(k) for k in range(30)], window="10m")
    _settled(w, qtbot)
    qtbot.waitUntil(lambda: not w.gpu_panel._stale or all(
        not w.gpu_panel._in_view(w.gpu_panel.rows[i]) for i in w.gpu_panel._stale), timeout=5000)
    tl = w.gpu_panel.timelines[0]
    stack = tl.stack
    assert stack.order[-1] == OTHERS and len(stack.grouped) >= PER_GPU - 10
    top = stack._tops[-1, -1]
    assert abs(top - sum((64 + p) * MiB for p in range(PER_GPU))) < MiB  # every process counted
    w.gpu_panel.set_plot_style("lines")
    assert len(tl.proc_curves) == LINE_CURVES  # the largest; the table lists all
    largest = max(tl.proc_curves, key=lambda k: k[2])
    assert largest[2] == 10_000 + PER_GPU - 1


def test_forty_users_do_not_widen_the_window(make_window, qtbot):
    w = make_window([_frame(k) for k in range(3)], window="10m")
    _settled(w, qtbot)
    assert w.width() == 1400 and w.gpu_panel.timelines[0].width() < 1400
    text = w.table.users.text()
    assert text.count(" GiB") == 6 and "+ 34 more users" in text
    assert w.table.users.toolTip().count("\n") == 39  # every user, one per line


def test_sixteen_gpus_are_built_a_few_per_turn_and_all_shown(make_window, qtbot):
    from dataclasses import replace

    from vramscope.ui.gpu_panel import ROWS_PER_TURN

    def sixteen(k):
        f = _frame(k)
        gpus = tuple(replace(f.gpus[g % 2], index=g, uuid=f"GPU-{g}", processes=f.gpus[g % 2].processes[:4])
                     for g in range(16))
        return replace(f, gpus=gpus)

    w = make_window([], window="10m")
    for k in range(5):
        w.feed.store.append(sixteen(k))
    w.refresh(force=True)
    assert len(w.gpu_panel.rows) == ROWS_PER_TURN  # the rest on the next turns of the event loop
    qtbot.waitUntil(lambda: len(w.gpu_panel.rows) == 16, timeout=5000)
    panel = w.gpu_panel
    assert panel.cards[1].used.text() != ""  # in view: filled in
    panel.ensureWidgetVisible(panel.rows[15])  # scrolled out until now: filled in as it comes
    assert panel.cards[15].used.text() == panel.cards[1].used.text()
    assert panel.cards[15].heading.text() == "GPU 15"


def test_a_card_out_of_view_shows_the_latest_frame_when_scrolled_to(make_window, qtbot):
    from dataclasses import replace

    def sixteen(k, used):
        f = _frame(k)
        return replace(f, gpus=tuple(replace(f.gpus[0], index=g, uuid=f"GPU-{g}", used=used,
                                             free=80 * GiB - used, processes=())
                                     for g in range(16)))

    w = make_window([sixteen(0, 10 * GiB)], window="10m")
    panel = w.gpu_panel
    qtbot.waitUntil(lambda: len(panel.rows) == 16, timeout=5000)
    panel.ensureWidgetVisible(panel.rows[15])
    assert panel.cards[15].used.text().startswith("10.0")
    panel.ensureWidgetVisible(panel.rows[0])
    w.feed.store.append(sixteen(1, 30 * GiB))  # GPU 15 is out of view when this comes
    w.refresh(force=True)
    assert panel.cards[0].used.text().startswith("30.0")
    panel.ensureWidgetVisible(panel.rows[15])
    assert panel.cards[15].used.text().startswith("30.0")
