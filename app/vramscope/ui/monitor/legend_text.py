"""How a row of a timeline's legend reads: 'train.py (4242) · 16.7 GiB', the
name shortened in the middle to fit the legend's column, never the figure."""

from __future__ import annotations

import functools
import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics

from vramscope.core.units import GiB

LEGEND_WIDTH = 240  # px: the legend's column beside each GPU's plot
LEGEND_TEXT_SIZE = 8.5  # pt
LEGEND_TEXT_ROOM = LEGEND_WIDTH - 40  # px for a row's text: the legend less its sample and margins


def legend_text(name: str, value: float | None, ended: bool) -> str:
    """The row's rich text: the name elided to fit (and escaped), the figure whole."""
    figure = "" if value is None or ended else f" · {value / GiB:.1f} GiB"
    metrics = _metrics()
    room = LEGEND_TEXT_ROOM - metrics.horizontalAdvance(figure)
    shown = metrics.elidedText(name, Qt.TextElideMode.ElideMiddle, max(room, 24))
    return html.escape(shown) + figure


@functools.cache
def _metrics() -> QFontMetrics:
    font = QFont()
    font.setPointSizeF(LEGEND_TEXT_SIZE)
    return QFontMetrics(font)
