"""The timelines' time axis works its ticks out once per scroll, and shows what
pyqtgraph's DateAxisItem shows with the same zoom levels, tick for tick, label
for label; its labels step through 2 and 10 minutes too, so that every time
window shows a few of them at any width."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPicture

from vramscope.ui.monitor.time_axis import CLOCK_STEPS, ZOOM_LEVELS, TimeAxis

from .frames import T0


def _date_axis() -> pg.DateAxisItem:
    """pyqtgraph's own date axis, with the zoom levels the timelines use."""
    axis = pg.DateAxisItem(orientation="bottom")
    axis.zoomLevels = ZOOM_LEVELS
    return axis


def _measured(axis):
    axis.fontMetrics = QFontMetrics(QFont())  # (set by the first paint otherwise)
    return axis


def _ticks(axis, lo: float, hi: float, px: float) -> list:
    levels = axis.tickValues(lo, hi, px)
    return [(spacing, values, axis.tickStrings(values, 1.0, spacing)) for spacing, values in levels]


def test_a_scrolling_window_gets_the_ticks_and_labels_of_pyqtgraphs_date_axis(qapp):
    ours, theirs = _measured(TimeAxis()), _measured(_date_axis())
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
            assert ours == _drawn(_date_axis(), hi - span, hi)


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


def _plain(specs) -> tuple:
    """What an axis draws, as plain values: its line, each tick line (with its
    pen's colour and width), each label (rect, flags, text)."""

    def line(pen, p1, p2):
        return (pen.color().getRgb(), pen.widthF(), p1.x(), p1.y(), p2.x(), p2.y())

    axis_line, ticks, texts = specs
    return (
        line(*axis_line),
        [line(*tick) for tick in ticks],
        [(r.x(), r.y(), r.width(), r.height(), int(flags), text) for r, flags, text in texts],
    )


def _pyqtgraphs(axis) -> tuple:
    """DateAxisItem's specs for the axis as it is now, worked out from scratch."""
    picture = QPicture()
    painter = QPainter(picture)
    try:
        return _plain(pg.DateAxisItem.generateDrawSpecs(axis, painter))
    finally:
        painter.end()


def test_an_axis_scrolled_in_place_draws_pyqtgraphs_ticks_and_labels_at_every_step(qapp):
    """Scrolling reuses the axis's geometry; labels come in and go out at both edges,
    the view is resized, restyled and its grid switched off on the way."""
    axis = TimeAxis(orientation="bottom")
    plot = pg.PlotWidget(axisItems={"bottom": axis})
    plot.resize(820, 240)
    plot.showGrid(x=True, y=True)
    plot.show()

    def scroll(span: float, steps: int, start: float) -> None:
        for step in range(steps):
            # redraws off the whole second (0.37 s a step at a minute's span), labels
            # crossing the edges at every span: 100 steps scroll 60 % of the view
            hi = start + step * span / 162
            plot.setXRange(hi - span, hi, padding=0)
            plot.grab()
            assert _plain(axis._specs) == _pyqtgraphs(axis), (span, step)

    for span in (60.0, 600.0, 3600.0):
        scroll(span, 100, T0 + 7.25)
    plot.resize(433, 200)
    scroll(600.0, 60, T0 + 500.5)
    axis.setPen("#ff8800")
    axis.setTextPen("#00ff88")
    scroll(600.0, 40, T0 + 800.5)
    font = QFont()
    font.setPointSize(14)
    axis.setStyle(tickFont=font)
    scroll(60.0, 80, T0 + 900.5)
    axis.setGrid(False)
    scroll(60.0, 80, T0 + 1000.5)


def test_scrolling_works_the_axis_geometry_out_once_per_size(qapp, monkeypatch):
    axis = TimeAxis(orientation="bottom")
    plot = pg.PlotWidget(axisItems={"bottom": axis})
    plot.resize(820, 240)
    plot.showGrid(x=True, y=True)
    plot.setXRange(T0 - 600, T0, padding=0)
    plot.show()
    plot.grab()
    worked = []
    original = pg.AxisItem.generateDrawSpecs
    monkeypatch.setattr(pg.AxisItem, "generateDrawSpecs", lambda s, p: worked.append(1) or original(s, p))
    for step in range(1, 200):  # a redraw a second for minutes, the axis at rest in size
        plot.setXRange(T0 + step - 600, T0 + step, padding=0)
        plot.grab()
    assert worked == []
    plot.resize(700, 240)  # another size: its geometry worked out again (as the layout settles)
    plot.grab()
    assert worked
    worked.clear()
    for step in range(200, 260):
        plot.setXRange(T0 + step - 600, T0 + step, padding=0)
        plot.grab()
    assert worked == []


def test_an_axis_scrolled_in_place_looks_like_a_fresh_one_pixel_for_pixel(qapp):
    axis = TimeAxis(orientation="bottom")
    scrolled = pg.PlotWidget(axisItems={"bottom": axis})
    scrolled.resize(820, 240)
    scrolled.showGrid(x=True, y=True)
    scrolled.show()
    for step in range(0, 90):
        hi = T0 + 7.25 + step * 1.3
        scrolled.setXRange(hi - 600, hi, padding=0)
        scrolled.grab()
        if step % 30 == 29:
            assert scrolled.grab().toImage() == _drawn(_date_axis(), hi - 600, hi)


def test_the_zoom_levels_are_pyqtgraphs_but_for_the_steps_of_minutes_and_seconds(qapp):
    theirs = pg.DateAxisItem(orientation="bottom").zoomLevels
    assert list(ZOOM_LEVELS) == list(theirs)
    for (spacing, ours), theirs_level in zip(ZOOM_LEVELS.items(), theirs.values()):
        assert ours.exampleText == theirs_level.exampleText
        pairs = list(zip(ours.tickSpecs, theirs_level.tickSpecs, strict=True))
        for our_spec, their_spec in pairs:
            assert (our_spec.spacing, our_spec.format) == (their_spec.spacing, their_spec.format)
            assert our_spec.autoSkip == (
                CLOCK_STEPS if spacing in (15 * 60, 30) and their_spec.autoSkip else their_spec.autoSkip
            )


def _labels(width: int, span: float, hi: float) -> list:
    """The labels a timeline of ``width`` px showing ``span`` seconds to ``hi``
    draws: (left, right, text)."""
    axis = TimeAxis(orientation="bottom")
    plot = pg.PlotWidget(axisItems={"bottom": axis})
    plot.resize(width, 200)
    plot.setXRange(hi - span, hi, padding=0)
    plot.show()
    plot.grab()
    return sorted((r.left(), r.right(), text) for r, _flags, text in axis._specs[2])


def test_every_time_window_shows_a_few_labels_apart_at_any_width(qapp):
    """A 1024 x 700 window's plots are ~450 px wide: ten minutes there showed one
    label (every five minutes, the second cut at the edge)."""
    for width in (450, 820, 1300):
        for span in (60.0, 600.0, 3600.0):
            for hi in (T0 + 7.25, T0 + 101.5, T0 + 333.0):
                labels = _labels(width, span, hi)
                assert len(labels) >= 3, (width, span, labels)
                for (_l, right, _t), (left, _r, _t2) in zip(labels, labels[1:]):
                    assert left > right, (width, span, labels)  # none over another
