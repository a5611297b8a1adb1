"""The timelines' time axis: pyqtgraph's DateAxisItem, its ticks worked out once
per scroll instead of once per redraw.

A timeline scrolls: every redraw moves its time range a few seconds while the
range's width and the axis's length in pixels stay. DateAxisItem then works
everything out again -- the zoom level (a font measure per level), the ticks
(a QDateTime conversion per tick), each label (strftime) and each label's size
(a text layout): about a millisecond a redraw, the largest part of drawing a
GPU's plot at rest (bench/gui_vs_nvitop.py). Here the ticks are worked out for
three widths of the range at once and read from there while the range stays
inside and its density (seconds per pixel) is the same; labels and their sizes
are remembered by value. What is drawn is DateAxisItem's, tick for tick.

pyqtgraph records the axis into a QPicture when it changed and plays the
picture back on every redraw; played back, each label is laid out again, and
recording lays it out once more. A scrolling axis changes at every redraw, so
here what it draws (the "draw specs") is kept instead and drawn straight onto
the view's painter. Making those specs again, pyqtgraph also works out the
axis's geometry again (a dozen mapping calls); here it is worked out once per
size and style (ui/monitor/axis_specs.py), checked against pyqtgraph's own specs then,
and the bounding rect the scene asks for at every redraw is remembered the same
way.

Its labels step through 1, 2, 5, 10, 15 and 30 minutes (or seconds), where
pyqtgraph's go 1, 5, 15: a ten-minute window on a plot ~450 px wide (a
1024 x 700 window) needs 80 s between labels and got one label every five
minutes -- one on screen, its neighbour cut at the edge.
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict

import pyqtgraph as pg
from pyqtgraph.graphicsItems import DateAxisItem as date_axis
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFont, QPainter, QPicture

from vramscope.ui.monitor.axis_specs import AxisGeometry, geometry_key, same_key, same_specs

REMEMBERED = 4096  # labels and label sizes kept (then forgotten and made again)
_DRAWN = True  # ``picture`` once the specs are made (pyqtgraph sets None when the axis changed)
CLOCK_STEPS = [1, 2, 5, 10, 15, 30]  # minutes (or seconds) between labels, the fewest that fit


def _stepping(spacing: int, label: str) -> date_axis.TickSpec:
    """Ticks every ``spacing`` seconds, labelled ``label``, skipping by CLOCK_STEPS."""
    return date_axis.TickSpec(spacing, date_axis.makeSStepper(spacing), label, autoSkip=CLOCK_STEPS)


def _clock_levels() -> OrderedDict:
    """pyqtgraph's zoom levels, those of minutes and of seconds stepping through
    CLOCK_STEPS (shared by every axis, as pyqtgraph shares its own)."""
    days = date_axis.HOUR_MINUTE_ZOOM_LEVEL.tickSpecs[0]  # pyqtgraph's own: midnight as "Thu 03"
    minutes = date_axis.ZoomLevel(
        [days, _stepping(date_axis.MINUTE_SPACING, "%H:%M")], date_axis.HOUR_MINUTE_ZOOM_LEVEL.exampleText
    )
    seconds = date_axis.ZoomLevel(
        [_stepping(date_axis.SECOND_SPACING, "%H:%M:%S")], date_axis.HMS_ZOOM_LEVEL.exampleText
    )
    return OrderedDict(  # DateAxisItem.__init__'s table (a test holds the two alike)
        [
            (math.inf, date_axis.YEAR_MONTH_ZOOM_LEVEL),
            (5 * 3600 * 24, date_axis.MONTH_DAY_ZOOM_LEVEL),
            (6 * 3600, date_axis.DAY_HOUR_ZOOM_LEVEL),
            (15 * 60, minutes),
            (30, seconds),
            (1, date_axis.MS_ZOOM_LEVEL),
        ]
    )


ZOOM_LEVELS = _clock_levels()


class TimeAxis(pg.DateAxisItem):
    _bounds: tuple | None = None  # (what the bounding rect depends on, the rect)

    def __init__(self, orientation: str = "bottom", **kwargs):
        super().__init__(orientation, **kwargs)
        self.zoomLevels = ZOOM_LEVELS
        self._ticks: tuple | None = None  # (density, low, high, levels, zoom level, min spacing)
        self._labels: dict[tuple, str] = {}  # (value, spacing) -> label
        self._sizes: dict[tuple, QRectF] = {}  # (font, box, flags, text) -> its bounding rect
        self._specs: tuple | None = None  # what the axis draws, until pyqtgraph says it changed
        self._geometry: AxisGeometry | None = None  # for this size and style (ui/monitor/axis_specs.py)
        self._font = QFont()

    def tickValues(self, minVal, maxVal, size):
        density = (maxVal - minVal) / size if size else 0.0
        held = self._ticks
        if (
            held is None
            or not held[1] <= minVal <= maxVal <= held[2]
            or abs(density - held[0]) > 1e-9 * abs(held[0])
        ):
            span = maxVal - minVal
            levels = super().tickValues(minVal - span, maxVal + span, 3 * size)  # the same density
            held = (density, minVal - span, maxVal + span, levels, self.zoomLevel, self.minSpacing)
            self._ticks = held
        self.zoomLevel, self.minSpacing = held[4], held[5]
        return [(spacing, [v for v in values if minVal <= v <= maxVal]) for spacing, values in held[3]]

    def tickStrings(self, values, scale, spacing):
        labels = self._labels
        missing = [v for v in values if (v, spacing) not in labels]
        if missing:
            if len(labels) > REMEMBERED:
                labels.clear()
            for v, text in zip(missing, super().tickStrings(missing, scale, spacing)):
                labels[(v, spacing)] = text
        return [labels[(v, spacing)] for v in values]

    def generateDrawSpecs(self, p):
        if not isinstance(p, _MeasuringPainter):
            p = _MeasuringPainter(p, self._sizes, id(self.style["tickFont"]))
        return super().generateDrawSpecs(p)

    def paint(self, p, opt, widget):
        """AxisItem.paint, the specs drawn straight onto ``p`` instead of through a
        QPicture. ``picture`` stays pyqtgraph's mark: None when the axis changed."""
        if self.picture is None:
            self._specs = self._draw_specs()
            self.picture = _DRAWN
        if self._specs is not None:
            p.save()
            try:
                p.setFont(self._font)
                self.drawPicture(p, *self._specs)
            finally:
                p.restore()

    def _draw_specs(self):
        """pyqtgraph's specs, or AxisGeometry's where its geometry was worked out
        for this size and style and both agreed then."""
        key = geometry_key(self)
        held = self._geometry
        with self._measuring() as painter:
            if held is not None and same_key(held.key, key):
                return held.specs(self, painter) if held.agrees else self.generateDrawSpecs(painter)
            specs = self.generateDrawSpecs(painter)
            if key is not None:
                held = self._geometry = AxisGeometry(self, key)
                held.agrees = same_specs(held.specs(self, painter), specs)
            return specs

    @contextlib.contextmanager
    def _measuring(self):
        """A painter that measures labels as pyqtgraph does (on a picture's painter,
        in the tick font), made only if a label is measured."""
        made: list[tuple[QPicture, QPainter]] = []

        def make() -> QPainter:
            picture = QPicture()
            painter = QPainter(picture)
            if self.style["tickFont"]:
                painter.setFont(self.style["tickFont"])
            made.append((picture, painter))  # (the picture outlives its painter)
            return painter

        try:
            yield _MeasuringPainter(make, self._sizes, id(self.style["tickFont"]))
        finally:
            for _picture, painter in made:
                self._font = QFont(painter.font())  # the labels' font, as the picture had it
                painter.end()

    def boundingRect(self):
        """AxisItem's, remembered while its geometry, its view's and its style stay
        (the scene asks at every redraw, and pyqtgraph maps both rects again)."""
        view = self.linkedView()
        key = (
            self.geometry(),
            None if view is None else view.geometry(),
            self.grid,
            self.style["hideOverlappingLabels"],
            self.style["tickLength"],
        )
        held = self._bounds
        if held is None or held[0] != key:
            held = self._bounds = (key, super().boundingRect())
        return QRectF(held[1])

    def resizeEvent(self, ev=None):
        self._ticks = None  # another length in pixels: another density
        self._geometry = None
        super().resizeEvent(ev)


class _MeasuringPainter:
    """The axis picture's painter, its text measures remembered (one font, a few
    labels); ``painter``: the painter, or a function making it when first needed."""

    def __init__(self, painter, sizes: dict, font_key: int):
        self._made = painter if isinstance(painter, QPainter) else None
        self._make = painter
        self._sizes, self._font = sizes, font_key

    @property
    def _painter(self) -> QPainter:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __getattr__(self, name):
        return getattr(self._painter, name)

    def boundingRect(self, rect, flags, text):
        key = (self._font, rect.width(), rect.height(), int(flags), text)
        held = self._sizes.get(key)
        if held is None:
            if len(self._sizes) > REMEMBERED:
                self._sizes.clear()
            held = self._sizes[key] = self._painter.boundingRect(rect, flags, text)
        return QRectF(held)  # (the caller trims its height)
