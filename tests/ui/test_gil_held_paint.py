"""The window paints holding the GIL (ui/qt/gil_held_paint.py).

Qt calls the table's ``data()`` and pyqtgraph's ``paint()`` for every cell and
item it paints. In a plain window each call takes the GIL anew from the event
loop, and beside another thread running Python each waits its turn: a repaint
stretched over the whole of the other thread's work. In vramscope's window the
paint runs inside the window's own Python ``event()``, so those calls find the
GIL already held. That is seen from inside them: the Python frame they return
to is the window's ``event``.
"""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QMainWindow

from vramscope.ui.qt.gil_held_paint import GilHeldPaintWindow
from vramscope.ui.processes.process_model import ProcessTableModel
from vramscope.ui.processes.process_table import ProcessTable
from vramscope.ui.qt.pens import ColourBook

from .frames import frame_at


WINDOW_EVENT = GilHeldPaintWindow.event.__code__


def _record_callers(monkeypatch) -> list[bool]:
    """For each later ``data()`` call: whether the window's ``event`` is among the
    Python frames below it. (Patched before the model is made: PySide6 looks a
    Python override up once.)"""
    seen: list[bool] = []
    data = ProcessTableModel.data

    def recorded(self, index, role=0):
        frame, inside = sys._getframe(1), False
        while frame is not None and not inside:
            inside, frame = frame.f_code is WINDOW_EVENT, frame.f_back
        seen.append(inside)
        return data(self, index, role)

    monkeypatch.setattr(ProcessTableModel, "data", recorded)
    return seen


def _repainted(view, qtbot, seen: list) -> list[bool]:
    qtbot.wait(50)
    seen.clear()
    view.viewport().update()
    qtbot.wait(50)
    assert seen, "the table was not repainted"
    return list(seen)


def test_the_window_s_table_is_painted_inside_the_window_s_own_python_call(make_window, qtbot, monkeypatch):
    seen = _record_callers(monkeypatch)
    w = make_window([frame_at(k) for k in range(20)])
    assert isinstance(w, GilHeldPaintWindow)
    qtbot.waitUntil(lambda: w.table.model.rowCount() > 0)
    assert all(_repainted(w.table.view, qtbot, seen))


def test_a_plain_window_paints_from_the_event_loop(qtbot, monkeypatch):
    """The contrast: the same table in a plain QMainWindow is painted with no
    Python frame below it (each call takes the GIL anew)."""
    seen = _record_callers(monkeypatch)
    table = ProcessTable(ColourBook())
    table.show_frame(frame_at(10))
    plain = QMainWindow()
    qtbot.addWidget(plain)
    plain.setCentralWidget(table)
    plain.resize(800, 400)
    plain.show()
    qtbot.waitExposed(plain)
    qtbot.waitUntil(lambda: table.model.rowCount() > 0)
    assert not any(_repainted(table.view, qtbot, seen))
