"""The active-memory timeline of one device: the largest stacks stacked as bands, the
others merged into one band on top (so the top edge is the allocated total), OOMs as
red lines, a cursor the user drags (or steps with the arrow keys), and a compared
snapshot's total as a dashed line. The legend is the window's (a line above the plot,
where it covers no peak)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal

from vramscope.core.snapshot.timeline import Timeline
from vramscope.core.units import GiB
from vramscope.ui.qt import pens, theme

FILL_ALPHA = 170


class TimelinePlot(pg.PlotWidget):
    """``cursor_moved(x)`` when the user moves the cursor."""

    cursor_moved = Signal(float)

    def __init__(self, parent=None):
        super().__init__(parent)
        p = self.getPlotItem()
        p.setMenuEnabled(False)
        p.hideButtons()
        p.setMouseEnabled(x=True, y=False)
        theme.gib_axis(p, 56)
        p.getAxis("bottom").enableAutoSIPrefix(False)  # seconds stay seconds
        self.cursor = pg.InfiniteLine(angle=90, movable=True)
        self.cursor.setZValue(20)
        p.addItem(self.cursor, ignoreBounds=True)
        self.cursor.sigPositionChanged.connect(lambda line: self.cursor_moved.emit(float(line.value())))
        self._items: list = []
        self.timeline: Timeline | None = None
        theme.colour_plot(self)

    def show_timeline(self, tl: Timeline, names: list[str], ooms_x: list[float], compare=None) -> list:
        """``names``: a label per band (and one for the merged band last);
        ``compare``: (x, total bytes) of another snapshot, or None. Returns the legend:
        (colour, dashed, name) of each band shown, top band first."""
        legend = []
        s = theme.current()
        p = self.getPlotItem()
        for item in self._items:
            p.removeItem(item)
        self._items = []
        self.timeline = tl
        x = tl.x
        lower = pg.PlotDataItem(x, np.zeros(len(x)))
        layers = list(tl.bands) + [tl.other]
        colours = list(s.PROCESS_COLOURS) + list(s.BUCKET_COLOURS)
        running = np.zeros(len(x), dtype=np.float64)
        for k, (band, name) in enumerate(zip(layers, names)):
            merged = k == len(layers) - 1
            running = running + band / GiB
            upper = pg.PlotDataItem(
                x, running.copy(), pen=pens.pen(s.MUTED if merged else colours[k % len(colours)], 1)
            )
            fill = pg.FillBetweenItem(
                lower,
                upper,
                brush=pens.brush(s.MUTED if merged else colours[k % len(colours)], alpha=FILL_ALPHA),
            )
            for item in (fill, upper):
                p.addItem(item)
                self._items.append(item)
            if band.any():
                legend.append((s.MUTED if merged else colours[k % len(colours)], False, name))
            lower = upper
        for ox in ooms_x:
            line = pg.InfiniteLine(
                pos=ox,
                angle=90,
                pen=pens.pen(s.ERROR, 2),
                label="OOM",
                labelOpts={"color": s.ERROR, "position": 0.92},
            )
            p.addItem(line, ignoreBounds=True)
            self._items.append(line)
        if compare is not None:
            cx, ctotal = compare
            other = pg.PlotDataItem(cx, ctotal / GiB, pen=pens.pen(s.TEXT, 1.5, dashed=True))
            p.addItem(other)
            self._items.append(other)
            legend.insert(0, (s.TEXT, True, "the compared snapshot's total"))
        p.setLabel("bottom", "seconds since the first entry" if tl.seconds else "trace entry")
        top = max(
            float(tl.total.max()) if len(tl.total) else 0.0,
            float(compare[1].max()) if compare is not None and len(compare[1]) else 0.0,
        )
        p.setYRange(0, max(top / GiB * 1.08, 1e-6), padding=0)
        right = float(x[-1]) if len(x) else 1.0
        if compare is not None and len(compare[0]):
            right = max(right, float(compare[0][-1]))
        p.setXRange(float(x[0]) if len(x) else 0.0, max(right, 1e-9), padding=0.01)
        self.cursor.setPen(pens.pen(s.TEXT, 1.5))
        self.cursor.setBounds((float(x[0]) if len(x) else 0.0, right))
        return legend

    def set_cursor(self, x: float) -> None:
        self.cursor.setValue(x)
