"""The stacked view of one GPU: what fills it, process by process.

The largest processes at the bottom, each a band in its colour and fill
(solid or hatched: colour x dash, as its line and its table swatch), the
small ones summed into one "others (n)" band on top that opens into its
processes on a click. Bands are QGraphicsPathItems created once per layer
and given a new path on each update, never re-created.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem

from vramscope.core.processes.stacking import (
    PROMOTED,
    STACK_SHOWN,
    align,
    choose_layers,
    corners,
    cumulative,
    thin,
)
from vramscope.core.units import GiB
from vramscope.ui.qt import pens, theme

OTHERS = ("others",)  # the layer key of the group
FILL_ALPHA = 150
DIMMED_FILL_ALPHA = 45


class Band:
    """One layer: the filled area and its top edge (the process's line style)."""

    def __init__(self, plot):
        self.under = QGraphicsPathItem()  # a light solid fill under a hatched one
        self.fill = QGraphicsPathItem()
        self.edge = QGraphicsPathItem()
        self.sample = pg.PlotDataItem(fillLevel=0)  # what the legend draws for it (never plotted)
        self._style = None
        for z, item in enumerate((self.under, self.fill, self.edge)):
            plot.addItem(item, ignoreBounds=True)
            item.setZValue(-21 + z)
            item.setPen(pg.mkPen(None))

    def set_style(self, colour: str, dash: int, width: float, alpha: int) -> None:
        if self._style == (colour, dash, width, alpha):
            return  # unchanged: no new pens and brushes every frame
        self._style = (colour, dash, width, alpha)
        self.fill.setBrush(pens.brush(colour, dash, alpha=alpha if not dash else min(255, alpha + 80)))
        self.under.setBrush(pens.brush(colour, 0, alpha=alpha // 3))
        self.under.setVisible(bool(dash) and self.fill.isVisible())
        pen = pens.pen(colour, width, dash)
        self.edge.setPen(pen)
        self.sample.setPen(pen)
        self.sample.setFillBrush(pens.brush(colour, dash, alpha=FILL_ALPHA))

    def set_shape(self, bottom: tuple, top: tuple) -> None:
        """The band between two lines, each (times, values) through its corners."""
        (t_bottom, bottom), (t_top, top) = bottom, top
        fill = pg.arrayToQPath(
            np.concatenate([t_top, t_bottom[::-1]]), np.concatenate([top, bottom[::-1]]), connect="all"
        )
        fill.closeSubpath()
        self.fill.setPath(fill)
        self.under.setPath(fill)
        self.edge.setPath(pg.arrayToQPath(t_top, top, connect="all") if len(t_top) else QPainterPath())

    def set_visible(self, on: bool) -> None:
        self.fill.setVisible(on)
        self.edge.setVisible(on)
        self.under.setVisible(on and self.fill.brush().style() != Qt.BrushStyle.SolidPattern)

    def remove(self, plot) -> None:
        for item in (self.under, self.fill, self.edge):
            plot.removeItem(item)


def shape_bands(bands: list[Band], t: np.ndarray, tops: np.ndarray) -> None:
    """Band i between cumulative top i - 1 (zero for the first) and top i (bytes, at
    times ``t``), in GiB. Each top goes through its corners once, and is the edge of
    one band and the floor of the next: the same outline, and a process whose
    memory stays flat (most of a training run) is a band of four points, not of a
    point per pixel (a wide or dashed edge costs Qt's stroker per segment)."""
    lines = [corners(t, row / GiB) for row in tops[: len(bands)]]
    floor = corners(t, np.zeros(len(t)))
    for i, band in enumerate(bands):
        band.set_shape(lines[i - 1] if i else floor, lines[i])


class StackedBands:
    """The bands of one GPU's plot; ``update`` lays them out from the store."""

    def __init__(self, plot, colours: pens.ColourBook):
        self.plot = plot
        self.colours = colours
        self.bands: dict[tuple, Band] = {}
        self.order: list[tuple] = []  # layer keys, bottom to top
        self.grouped: list[tuple] = []  # the process keys inside "others"
        self.expanded = False
        self.selected = None
        self._t = np.empty(0)
        self._tops = np.zeros((0, 0))
        self.visible = True

    def update(
        self,
        series,
        base_t: np.ndarray,
        alive: dict,
        ended: list,
        first_seen: list,
        must: set,
        columns: int,
        identity,
        shown: int = STACK_SHOWN,
        everyone: tuple | None = None,
    ) -> float:
        """Lay out the bands; returns the top of the stack (bytes) for the y range.
        ``series(key)`` -> (t, v): a process's history in the window.
        ``shown``: processes on their own before the rest are grouped (what the legend fits).
        ``everyone``: (t, v), the sum of all the processes' figures on ``base_t``'s times;
        with it "others" is that minus the processes drawn on their own, and the
        grouped processes' series are never read (a GPU with 1,000 processes)."""
        own, rest = choose_layers(
            alive,
            first_seen,
            must,
            self.expanded,
            min(shown, STACK_SHOWN),
            fits=min(shown, STACK_SHOWN + PROMOTED),
        )  # (as the legend has rows)
        grouped = rest + list(ended)
        layers, keys = [], []
        for key in own:
            t, v = series(key)
            layers.append(align(base_t, t, v))
            keys.append(key)
        if grouped:
            if everyone is not None:
                total = np.maximum(align(base_t, *everyone) - sum(layers, np.zeros(len(base_t))), 0.0)
            else:
                total = np.zeros(len(base_t))
                for key in grouped:
                    t, v = series(key)
                    total += align(base_t, t, v)
            layers.append(total)
            keys.append(OTHERS)
        self.order, self.grouped = keys, grouped
        for key in [k for k in self.bands if k not in keys]:
            self.bands.pop(key).remove(self.plot)
        tops = cumulative(layers, len(base_t))
        t, tops = thin(base_t, tops, columns)
        self._t, self._tops = t, tops
        for key in keys:
            band = self.bands.get(key)
            if band is None:
                band = self.bands[key] = Band(self.plot)
            self._style(band, key, identity)
            band.set_visible(self.visible)
        shape_bands([self.bands[key] for key in keys], t, tops)
        return float(tops[-1].max()) if len(keys) and tops.shape[1] else 0.0

    def restyle(self, identity) -> None:
        for key, band in self.bands.items():
            self._style(band, key, identity)

    def _style(self, band: Band, key: tuple, identity) -> None:
        if key == OTHERS:
            colour, dash = theme.current().MUTED, 0
        else:
            colour, dash = self.colours.style(identity(key))
        chosen = (
            self.selected is None or key == self.selected or (key == OTHERS and self.selected in self.grouped)
        )
        band.set_style(
            colour,
            dash,
            2.5 if self.selected is not None and chosen else 1.2,
            FILL_ALPHA if chosen else DIMMED_FILL_ALPHA,
        )

    def set_visible(self, on: bool) -> None:
        self.visible = on
        for band in self.bands.values():
            band.set_visible(on)

    def layer_at(self, x: float, y_bytes: float):
        """The layer key under a point of the plot (view coordinates), or None."""
        if not len(self._t) or not self.order:
            return None
        i = int(np.clip(np.searchsorted(self._t, x), 0, len(self._t) - 1))
        bottom = 0.0
        for row, key in enumerate(self.order):
            top = self._tops[row, i]
            if bottom <= y_bytes <= top:
                return key
            bottom = top
        return None
