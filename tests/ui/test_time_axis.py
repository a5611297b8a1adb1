"""The timelines' time axis works its ticks out once per scroll, and shows what
pyqtgraph's DateAxisItem shows, tick for tick, label for label."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics

from vramscope.ui.time_axis import TimeAxis

from .frames import T0


def _measured(axis):
    axis.fontMetrics = QFontMetrics(QFont())  # (set by the first paint otherwise)
    return axis


def _ticks(axis, lo: float, hi: float, px: float) -> list:
    levels = axis.tickValues(lo, hi, px)
    return [(spacing, values, axis.tickStrings(values, 1.0, spacing)) for spacing, values in levels]


def test_a_scrolling_window_gets_the_ticks_and_labels_of_pyqtgraphs_date_axis(qapp):
    ours, theirs = _measured(TimeAxis()), _measured(pg.DateAxisItem(orientation="bottom"))
    for span, px in ((60.0, 820.0), (600.0, 820.0), (3600.0, 640.0), (86_400.0, 1100.0)):
        for step in range(0, 400, 3):  # a redraw every 3 s, for minutes
            hi = T0 + 7.25 + step
            assert _ticks(ours, hi - span, hi, px) == _ticks(theirs, hi - span, hi, px)
    assert ours.zoomLevel is theirs.zoomLevel


def test_the_ticks_are_worked_out_once_while_the_window_scrolls(qapp, monkeypatch):
    axis = _measured(TimeAxis())
    worked = []
    original = pg.DateAxisItem.tickValues
    monkeypatch.setattr(pg.DateAxisItem, "tickValues", lambda s, *a: worked.append(a) or original(s, *a))
    for step in range(0, 300, 3):  # ten-minute window, five minutes of redraws
        axis.tickValues(T0 + step - 600, T0 + step, 820.0)
    assert len(worked) == 1
    axis.tickValues(T0 - 3600, T0, 820.0)  # another window: worked out anew
    assert len(worked) == 2


def _drawn(axis_item, lo: float, hi: float):
    plot = pg.PlotWidget(axisItems={"bottom": axis_item})
    plot.resize(820, 240)
    plot.showGrid(x=True, y=True)
    plot.setXRange(lo, hi, padding=0)
    plot.show()
    return plot.grab().toImage()


def test_the_axis_draws_what_pyqtgraphs_date_axis_draws_pixel_for_pixel(qapp):
    for span in (60.0, 600.0, 3600.0):
        for step in (0, 3, 6):  # scrolling: the axis worked out anew each time
            hi = T0 + 7.25 + step
            ours = _drawn(TimeAxis(orientation="bottom"), hi - span, hi)
            assert ours == _drawn(pg.DateAxisItem(orientation="bottom"), hi - span, hi)


def test_a_redraw_with_the_range_unchanged_draws_the_same_again(qapp):
    axis = TimeAxis(orientation="bottom")
    plot = pg.PlotWidget(axisItems={"bottom": axis})
    plot.resize(820, 240)
    plot.setXRange(T0 - 600, T0, padding=0)
    plot.show()
    first = plot.grab().toImage()
    assert axis.picture is not None  # worked out once
    axis.update()
    assert plot.grab().toImage() == first
    plot.setXRange(T0 - 540, T0 + 60, padding=0)  # scrolled a minute: other labels
    assert plot.grab().toImage() != first
