"""Every colour a window draws with, read back from what Qt and pyqtgraph hold:
widget palettes and style sheets, rich text, list and table item colours,
and the pens, brushes and text of every plot item. A live theme switch is
complete when none of them is a colour of the old scheme only."""

from __future__ import annotations

import re

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QGraphicsPathItem,
    QLabel,
    QTableView,
    QTableWidget,
    QTextEdit,
    QTreeWidget,
    QWidget,
)

from vramscope.ui.qt import theme

_HEX = re.compile(r"#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6})\b")
_ROLES = (
    "Window",
    "WindowText",
    "Base",
    "AlternateBase",
    "Text",
    "Button",
    "ButtonText",
    "PlaceholderText",
    "ToolTipBase",
    "Mid",
    "Dark",
    "Light",
)
_TEXT_ROLES = ("WindowText", "Text", "ButtonText", "PlaceholderText")
# white text on a coloured badge (the error labels) in both schemes: as a text
# colour it is no scheme's (the light scheme's white is a background)
BADGE_TEXT = "#ffffff"
_BADGE_TEXT = re.compile(r"(?<![-\w])color:\s*" + BADGE_TEXT, re.IGNORECASE)


def scheme_colours(s: theme.Scheme) -> set[str]:
    return {c.lower() for c in (*s.colours().values(), *s.BUCKET_COLOURS, *s.PROCESS_COLOURS)}


def only_in(old: theme.Scheme, new: theme.Scheme) -> set[str]:
    """The colours a window may no longer show after switching from ``old`` to ``new``."""
    return scheme_colours(old) - scheme_colours(new)


def _hexes(text: str):
    for h in _HEX.findall(text or ""):
        yield ("#" + h[3:] if len(h) == 9 else h).lower()  # Qt's #AARRGGBB


def _colour(thing) -> str | None:
    """'#rrggbb' of a QColor, pen, brush or anything pg.mkColor takes; None when nothing is drawn."""
    if thing is None:
        return None
    if hasattr(thing, "style") and hasattr(thing, "color"):  # QPen, QBrush
        style = thing.style()
        if style in (Qt.PenStyle.NoPen, Qt.BrushStyle.NoBrush):
            return None
        return thing.color().name().lower()
    try:
        return pg.mkColor(thing).name().lower()
    except Exception:  # noqa: BLE001 - pyqtgraph accepts more than colours (dict pens)
        return pg.mkPen(thing).color().name().lower()


def widget_colours(w: QWidget):
    """(where, '#rrggbb') for one widget."""
    name = f"{type(w).__name__}#{w.objectName() or hex(id(w))}"
    for h in _hexes(_BADGE_TEXT.sub("", w.styleSheet())):
        yield f"{name} style sheet", h
    palette = w.palette()
    for role in _ROLES:
        colour = palette.color(QPalette.ColorGroup.Active, getattr(QPalette.ColorRole, role))
        if not (role in _TEXT_ROLES and colour.name() == BADGE_TEXT):
            yield f"{name} palette {role}", colour.name().lower()
    if isinstance(w, QLabel):
        for h in _hexes(w.text()):
            yield f"{name} text {w.text()[:40]!r}", h
    if isinstance(w, QTextEdit):
        for h in _hexes(w.toHtml()):
            yield f"{name} html", h
    if isinstance(w, QTreeWidget):
        for i in range(w.topLevelItemCount()):
            item = w.topLevelItem(i)
            for c in range(w.columnCount()):
                colour = _colour(item.foreground(c))
                if colour:
                    yield f"{name} row {i} column {c}", colour
            icon = item.icon(0)
            if not icon.isNull():
                image = icon.pixmap(12, 12).toImage()
                yield f"{name} row {i} icon", image.pixelColor(6, 6).name().lower()
    elif isinstance(w, QTableWidget):
        for r in range(w.rowCount()):
            for c in range(w.columnCount()):
                item = w.item(r, c)
                colour = _colour(item.foreground()) if item is not None else None
                if colour:
                    yield f"{name} cell {r},{c}", colour
    elif isinstance(w, QTableView) and w.model() is not None:
        model = w.model()
        for r in range(model.rowCount()):
            for c in range(model.columnCount()):
                value = model.index(r, c).data(Qt.ItemDataRole.ForegroundRole)
                colour = _colour(value) if value is not None else None
                if colour:
                    yield f"{name} cell {r},{c}", colour
    if isinstance(w, pg.GraphicsView):
        yield f"{name} plot background", w.backgroundBrush().color().name().lower()
        for item in w.scene().items():
            for what, colour in plot_item_colours(item):
                yield f"{name} {type(item).__name__} {what}", colour


def plot_item_colours(item):
    """(what, '#rrggbb') for one pyqtgraph item."""

    def pairs(**things):
        for what, thing in things.items():
            colour = _colour(thing)
            if colour:
                yield what, colour

    if isinstance(item.parentItem(), pg.PlotDataItem):
        return  # a PlotDataItem's own curve and symbols: read from its opts below
    if isinstance(item, pg.AxisItem):
        yield from pairs(pen=item.pen(), text=item.textPen())
        yield from (("label", h) for h in _hexes(item.label.toHtml()))
    elif isinstance(item, pg.PlotDataItem):
        o = item.opts
        yield from pairs(pen=o.get("pen"))
        if o.get("symbol") is not None:
            yield from pairs(symbol_pen=o.get("symbolPen"), symbol_brush=o.get("symbolBrush"))
    elif isinstance(item, pg.PlotCurveItem):
        yield from pairs(pen=item.opts.get("pen"))
    elif isinstance(item, pg.ScatterPlotItem):
        yield from pairs(pen=item.opts.get("pen"), brush=item.opts.get("brush"))
    elif isinstance(item, pg.BarGraphItem):
        yield from pairs(pen=item.opts.get("pen"), brush=item.opts.get("brush"))
    elif isinstance(item, pg.InfiniteLine):
        yield from pairs(pen=item.pen)
    elif isinstance(item, pg.TextItem):  # the markers' labels too
        yield from pairs(text=item.color, fill=item.fill)
    elif isinstance(item, pg.LabelItem):
        yield from (("text", h) for h in _hexes(item.item.toHtml()))
    elif isinstance(item, pg.LegendItem):
        yield from pairs(text=item.opts.get("labelTextColor"))
    elif isinstance(item, QGraphicsPathItem):
        yield from pairs(pen=item.pen(), brush=item.brush())


def stale_colours(root: QWidget, old: theme.Scheme, new: theme.Scheme) -> list[str]:
    """Where ``root`` and its children still show a colour of ``old`` only."""
    stale = only_in(old, new)
    found = []
    for w in [root, *root.findChildren(QWidget)]:
        for where, colour in widget_colours(w):
            if colour in stale:
                found.append(f"{where}: {colour}")
    return found


def count_colours(root: QWidget, colours: set[str]) -> int:
    """How many of the places ``stale_colours`` reads hold one of ``colours``."""
    colours = {c.lower() for c in colours}
    return sum(
        colour in colours for w in [root, *root.findChildren(QWidget)] for _where, colour in widget_colours(w)
    )
