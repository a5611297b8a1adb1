"""A busy box's process table is built once the frame's plots are drawn (the
table's worker holds the GIL in turns, and plots drawn beside it made the window
stall: bench/window_scale.py); a small one at once, as before."""

from __future__ import annotations

import time

from vramscope.core.processes.process_rows import TableBuilder
from vramscope.ui.processes.process_table import ProcessTable
from vramscope.ui.processes.table_worker import AFTER_PLOTS_MS
from vramscope.ui.qt.pens import ColourBook
from vramscope.ui.timeline.gpu_timeline import GpuTimeline

from .frames import frame_at
from .test_big_box import PER_GPU, _frame

SHOW_FRAME = ProcessTable.show_frame  # as the app has it (tests/ui settle every table they show)


def _recorded(monkeypatch) -> list:
    """(what, time, frame time) of each plot drawn, table asked for and table built."""
    events = []
    monkeypatch.setattr(ProcessTable, "show_frame", SHOW_FRAME)
    draw, ask, build = GpuTimeline.update_from, ProcessTable.show_frame, TableBuilder.build

    def drawn(self, store, since, t_end, *a, **k):
        events.append(("plot", time.monotonic(), t_end))
        return draw(self, store, since, t_end, *a, **k)

    def asked(self, frame, store=None):
        events.append(("ask", time.monotonic(), frame.time))
        return ask(self, frame, store)

    def built(self, frame, store, order):
        events.append(("table", time.monotonic(), frame.time))
        return build(self, frame, store, order)

    monkeypatch.setattr(GpuTimeline, "update_from", drawn)
    monkeypatch.setattr(ProcessTable, "show_frame", asked)
    monkeypatch.setattr(TableBuilder, "build", built)
    return events


def test_a_busy_frame_s_table_is_built_after_its_plots_are_drawn(make_window, qtbot, monkeypatch):
    events = _recorded(monkeypatch)
    w = make_window([_frame(k) for k in range(30)], window="10m")
    qtbot.waitUntil(lambda: w.table.model.rowCount() == 2 * PER_GPU, timeout=10_000)
    kinds = [e[0] for e in events]
    # (on a loaded machine the window's next refresh may ask, and build, again before the
    # wait sees the rows: the first build is the one that must follow the plots)
    assert kinds.count("table") >= 1 and "plot" in kinds
    table = kinds.index("table")
    assert "plot" in kinds[:table]  # the frame's plots are drawn first
    asked = next(e for e in events if e[0] == "ask")
    assert events[table][1] - asked[1] >= 0.9 * AFTER_PLOTS_MS / 1000  # (a coarse timer: +-5 %)


def test_a_newer_busy_frame_while_one_waits_is_the_one_built(make_window, qtbot, monkeypatch):
    events = _recorded(monkeypatch)
    w = make_window([_frame(k) for k in range(30)], window="10m")
    w.feed.store.append(_frame(30))
    w.refresh()  # within the wait: the table shows the newest frame, built once
    qtbot.waitUntil(lambda: w.table.model.rowCount() == 2 * PER_GPU, timeout=10_000)
    assert w.table.builds.worker.wait_idle()
    qtbot.wait(AFTER_PLOTS_MS + 50)
    # of the busy frames, only the newest is built (a window's own first frame, drawn at
    # start before the store's busy ones on a loaded machine, is not one of them)
    busy = {_frame(k).time for k in range(31)}
    assert [e[2] for e in events if e[0] == "table" and e[2] in busy] == [_frame(30).time]


def test_a_small_table_is_built_at_once(qtbot, monkeypatch):
    events = _recorded(monkeypatch)
    table = ProcessTable(ColourBook())
    qtbot.addWidget(table)
    table.show_frame(frame_at(10))
    assert table.builds.worker.wait_idle()  # no turn of the event loop in between: not waiting for plots
    assert [e[0] for e in events] == ["ask", "table"]
    qtbot.waitUntil(lambda: table.model.rowCount() > 0)  # and shown


def test_a_busy_table_waits_for_a_turn_of_the_event_loop(qtbot, monkeypatch):
    events = _recorded(monkeypatch)
    table = ProcessTable(ColourBook())
    qtbot.addWidget(table)
    table.show_frame(_frame(3))
    assert table.builds.worker.wait_idle()
    assert [e[0] for e in events] == ["ask"]  # the plots' turn first
    qtbot.waitUntil(lambda: table.model.rowCount() == 2 * PER_GPU, timeout=10_000)
    assert [e[0] for e in events] == ["ask", "table"]
