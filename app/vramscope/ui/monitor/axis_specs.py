"""A scrolling bottom axis's draw specs, made from the geometry that stays.

pyqtgraph's ``AxisItem.generateDrawSpecs`` returns what an axis draws: its line,
a line per tick, a rect and text per label. Each time it works out the axis's
geometry again -- its bounds and the grid's in the item's coordinates, its
length in pixels, its bounding rect once per label -- through a dozen mapping
calls, most of them Python (a timeline's time axis, 2 GPUs at 1 s: a quarter of
the window's GUI thread). A timeline scrolls: between two redraws only the
start of its range moves, and the geometry stays until the axis is resized or
restyled.

``AxisGeometry`` holds that geometry, worked out once, and ``specs`` places the
ticks and labels for a range as ``generateDrawSpecs`` does (pyqtgraph 0.13 and
0.14: orientation "bottom", the axis's own ticks, the axis line not stopped at
a tick), the same arithmetic in the same order, so the same floats. The time
axis (ui/monitor/time_axis.py) compares the two whenever it works the geometry out
again, and keeps to pyqtgraph's own where they differ.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pyqtgraph.functions as fn
from PySide6.QtCore import QPointF, QRectF, Qt

LABEL_FLAGS = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextDontClip
_MEASURE_BOX = QRectF(0, 0, 100, 100)  # pyqtgraph measures each label in this box
_MEASURE_FLAGS = Qt.AlignmentFlag.AlignCenter


def geometry_key(axis: pg.AxisItem) -> tuple | None:
    """What an axis's geometry and style are made of, compared by value (None:
    an axis ``AxisGeometry`` does not draw)."""
    view = axis.linkedView()
    if (
        axis.orientation != "bottom"
        or view is None
        or axis._tickLevels is not None
        or any(axis.style["stopAxisAtTick"])
    ):
        return None
    widget = axis.getViewWidget()
    pens = (axis._pen, axis._tickPen)  # by identity: setPen makes a new one
    return pens, (
        axis.geometry(),
        view.geometry(),
        None if widget is None else widget.transform(),
        axis.grid,
        axis.scale,
        axis.autoSIPrefixScale,
        pg.getConfigOption("foreground"),
        dict(axis.style),
    )


def same_key(a: tuple | None, b: tuple | None) -> bool:
    return a is not None and b is not None and all(x is y for x, y in zip(a[0], b[0])) and a[1] == b[1]


class AxisGeometry:
    """A bottom axis's geometry under one ``geometry_key``: what ``specs`` needs
    besides the range, its ticks and their labels."""

    def __init__(self, axis: pg.AxisItem, key: tuple):
        self.key = key
        bounds = axis.mapRectFromParent(axis.geometry())
        view = axis.linkedView()
        if axis.grid is False:
            tick_bounds = bounds
        else:
            tick_bounds = view.mapRectToItem(axis, view.boundingRect())
        span = (bounds.topLeft() + pg.Point(-1.0, 1.0), bounds.topRight() + pg.Point(1.0, 1.0))
        points = [axis.mapToDevice(point) for point in span]
        self.length = None if None in points else pg.Point(points[1] - points[0]).length()
        self.width = bounds.width()
        self.tick_start = tick_bounds.top()
        self.tick_stop = bounds.top()
        self.axis_spec = (axis.pen(), span[0], span[1])
        self.bounding = axis.boundingRect()
        self.agrees = False  # whether ``specs`` gave pyqtgraph's own specs (the axis checks once)
        self._pens: dict[int, object] = {}  # alpha -> the tick pen with it

    def specs(self, axis: pg.AxisItem, painter) -> tuple | None:
        """``generateDrawSpecs`` for ``axis`` at its current range; ``painter``
        measures a label not yet measured (with the axis's tick font)."""
        length = self.length
        if not length:
            return None
        style = axis.style
        low, high = axis.range
        levels = axis.tickValues(low, high, length)
        dif = high - low
        if dif == 0:
            x_scale, offset = 1, 0
        else:
            x_scale = self.width / dif
            offset = low * x_scale
        x_low, x_high = low * x_scale - offset, high * x_scale - offset
        x_min, x_max = min(x_low, x_high), max(x_low, x_high)
        grid = axis.grid
        tick_start, tick_stop = self.tick_start, self.tick_stop

        positions: list[list] = []
        tick_specs = []
        for i, (_spacing, ticks) in enumerate(levels):
            at: list = []
            positions.append(at)
            pen = self._tick_pen(axis, i, len(ticks), style, grid, length)
            end = tick_stop if grid is not False else tick_stop + style["tickLength"] / (i * 0.5 + 1.0)
            for v in ticks:
                x = (v * x_scale) - offset
                if x < x_min or x > x_max:
                    at.append(None)
                    continue
                at.append(x)
                tick_specs.append((pen, QPointF(x, tick_start), QPointF(x, end)))

        text_specs: list = []
        if not style["showValues"]:
            return self.axis_spec, tick_specs, text_specs
        text_top = tick_stop + (max(0, style["tickLength"]) + style["tickTextOffset"][1])
        bounding = self.bounding
        widths: list[float] = []
        heights: list[float] = []
        last_height = 0
        scale = axis.autoSIPrefixScale * axis.scale
        for i in range(min(len(levels), style["maxTextLevel"] + 1)):
            spacing, values = levels[i]
            strings = axis.tickStrings(values, scale, spacing)
            if len(strings) == 0:
                continue
            sizes = []
            for s, x in zip(strings, positions[i]):
                if x is None:
                    sizes.append(None)
                    continue
                size = self._size(s, painter)
                sizes.append(size)
                widths.append(size[0])
                heights.append(size[1])
            if widths:
                fill, tallest = np.sum(widths), np.max(heights)
            else:
                fill, tallest = 0, 0
            if i > 0 and any(
                len(text_specs) >= n_texts and float(fill) / length >= limit
                for n_texts, limit in style["textFillLimits"]
            ):
                break
            last_height = tallest
            for s, x, size in zip(strings, positions[i], sizes):
                if x is None:
                    continue
                width, height = size
                rect = QRectF(x - width / 2.0, text_top, width, height)
                if bounding & rect != rect:
                    continue
                text_specs.append((rect, LABEL_FLAGS, s))
        axis._updateMaxTextSize(last_height)
        return self.axis_spec, tick_specs, text_specs

    def _tick_pen(self, axis, level: int, count: int, style: dict, grid, length: float):
        alpha = style["tickAlpha"]
        if alpha is None:
            alpha = 255 / (level + 1)
            if grid is not False:
                alpha *= grid / 255.0 * fn.clip_scalar((0.05 * length / (count + 1)), 0.0, 1.0)
        elif isinstance(alpha, float):
            alpha = min(255, max(0, int(round(alpha * 255))))
        key = int(alpha)
        pen = self._pens.get(key)
        if pen is None:
            pen = axis.tickPen()
            if pen.brush().style() == Qt.BrushStyle.SolidPattern:
                pen = pg.QtGui.QPen(pen)
                color = pg.QtGui.QColor(pen.color())
                color.setAlpha(key)
                pen.setColor(color)
            self._pens[key] = pen
        return pen

    @staticmethod
    def _size(label: str, painter) -> tuple[float, float]:
        """A label's (width, height) as pyqtgraph measures it (the painter remembers)."""
        rect = painter.boundingRect(QRectF(_MEASURE_BOX), _MEASURE_FLAGS, label)
        return rect.width(), rect.height() * 0.8  # (pyqtgraph's: "usually just a bit too large")


def same_specs(a: tuple | None, b: tuple | None) -> bool:
    """Whether two draw specs draw the same (pens, points and rects by value)."""
    if a is None or b is None:
        return a is b
    (pen_a, a1, a2), ticks_a, texts_a = a
    (pen_b, b1, b2), ticks_b, texts_b = b
    return (
        pen_a == pen_b
        and a1 == b1
        and a2 == b2
        and len(ticks_a) == len(ticks_b)
        and all(p == q and s1 == t1 and s2 == t2 for (p, s1, s2), (q, t1, t2) in zip(ticks_a, ticks_b))
        and len(texts_a) == len(texts_b)
        and all(r == q and int(f) == int(g) and s == t for (r, f, s), (q, g, t) in zip(texts_a, texts_b))
    )
