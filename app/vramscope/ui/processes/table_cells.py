"""The table's painted cells: the PID cell's swatch -- the process's colour and
line style in the plots -- and the Growth cell's sparkline of the last minutes.
Colours are read when painted, so a theme switch needs only a repaint."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QStyledItemDelegate

from vramscope.ui.processes.process_model import SPARK_ROLE, STYLE_ROLE
from vramscope.ui.qt import pens, theme

SWATCH_WIDTH = 22
SPARK_WIDTH = 54


class SwatchDelegate(QStyledItemDelegate):
    """The PID cell: a short line and fill in the process's plot style, then the PID."""

    def paint(self, painter: QPainter, option, index) -> None:
        style = index.data(STYLE_ROLE)
        super().paint(painter, option, index)
        if not style:
            return
        colour, dash = style
        r = option.rect
        box = QRectF(r.left() + 4, r.top() + 4, SWATCH_WIDTH - 6, r.height() - 8)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(box, pens.brush(colour, dash, alpha=150))
        pen = QPen(QColor(colour), 2.0)
        pen.setStyle(pens.DASHES[dash % len(pens.DASHES)])
        painter.setPen(pen)
        painter.drawLine(QPointF(box.left(), box.top()), QPointF(box.right(), box.top()))
        painter.restore()


class SparkDelegate(QStyledItemDelegate):
    """The Growth cell: the text on the right, the last minutes' curve on the left."""

    def paint(self, painter: QPainter, option, index) -> None:
        super().paint(painter, option, index)
        values = index.data(SPARK_ROLE) or ()
        if len(values) < 2:
            return
        r = option.rect
        lo, hi = min(values), max(values)
        span = hi - lo
        w, h = min(SPARK_WIDTH, r.width() // 2), r.height() - 6
        x0, y0 = r.left() + 4, r.top() + 3
        path = QPainterPath()
        for i, v in enumerate(values):
            y = y0 + h / 2 if span <= 0 else y0 + h - (v - lo) / span * h
            x = x0 + i * w / (len(values) - 1)
            if i == 0:
                path.moveTo(x, y)
            else:
                path.lineTo(x, y)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(theme.PLOT_FOREGROUND), 1.2))
        painter.drawPath(path)
        painter.restore()
