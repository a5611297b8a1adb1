"""A GPU timeline's plot: a view the app ranges itself, a GiB axis on the left
and a time axis below -- nothing else.

pyqtgraph's ``PlotItem`` (what ``addPlot`` makes) also builds, for every plot,
a "Plot Options" panel of some fifty widgets, its context menu, the view's menu
and an auto-range button. The timelines switch all of them off, yet making them
was more than half of making a GPU's timeline (14-16 ms of CPU, 6-7 ms without
them), once per GPU row while a 16-GPU window starts. And ``PlotItem.addItem``
sets each curve's downsampling and clip-to-view to that panel's settings (both
off): the timelines' curves lost the peak downsampling and clipToView they were
made with (pyqtgraph's advice for long series, ``PlotDataItem.setDownsampling``).

Here a ``ViewBox`` and two ``AxisItem``s are laid out as ``PlotItem`` lays them
(its layout rows 2-3, columns 0-1), and the few ``PlotItem`` calls the
timelines make are answered by the view or an axis.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsGridLayout, QGraphicsItem, QSizePolicy

from vramscope.ui.qt import theme

_VIEW, _LEFT, _BOTTOM = (0, 1), (0, 0), (1, 1)  # (row, column) in the plot's layout


class TimePlot(pg.GraphicsWidget):
    """``bottom``: the time axis; ``left_width``: the GiB axis's width in pixels."""

    def __init__(self, bottom: pg.AxisItem, left_width: int, parent=None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        layout = QGraphicsGridLayout()
        layout.setContentsMargins(1, 1, 1, 1)
        layout.setHorizontalSpacing(0)
        layout.setVerticalSpacing(0)
        self.setLayout(layout)
        self.vb = pg.ViewBox(enableMenu=False)
        self.vb.setMouseEnabled(x=False, y=False)
        self.vb.disableAutoRange()
        layout.addItem(self.vb, *_VIEW)
        self.axes = {"left": pg.AxisItem("left"), "bottom": bottom}
        for name, at in (("left", _LEFT), ("bottom", _BOTTOM)):
            axis = self.axes[name]
            axis.linkToView(self.vb)
            layout.addItem(axis, *at)
            axis.setZValue(0.5)  # over the curves, as in a PlotItem
            axis.setFlag(QGraphicsItem.GraphicsItemFlag.ItemNegativeZStacksBehindParent)
        for i in range(2):
            for set_size in (layout.setRowPreferredHeight, layout.setRowMinimumHeight, layout.setRowSpacing):
                set_size(i, 0)
            for set_size in (
                layout.setColumnPreferredWidth,
                layout.setColumnMinimumWidth,
                layout.setColumnSpacing,
            ):
                set_size(i, 0)
            layout.setRowStretchFactor(i, 1)
            layout.setColumnStretchFactor(i, 1)
        layout.setRowStretchFactor(_VIEW[0], 100)
        layout.setColumnStretchFactor(_VIEW[1], 100)
        theme.gib_axis(self, left_width)
        self.items: list = []  # what was added, in order (as PlotItem.items)

    # -- the PlotItem calls the timelines make ----------------------------------------
    def getViewBox(self) -> pg.ViewBox:
        return self.vb

    def getAxis(self, name: str) -> pg.AxisItem:
        return self.axes[name]

    def addItem(self, item, ignoreBounds: bool = False) -> None:
        """Into the view, with the settings the item was made with."""
        self.items.append(item)
        self.vb.addItem(item, ignoreBounds=ignoreBounds)

    def removeItem(self, item) -> None:
        if item in self.items:
            self.items.remove(item)
        self.vb.removeItem(item)

    def setMouseEnabled(self, x: bool, y: bool) -> None:
        self.vb.setMouseEnabled(x=x, y=y)

    def setXRange(self, low: float, high: float, padding: float = 0) -> None:
        self.vb.setXRange(low, high, padding=padding)

    def setYRange(self, low: float, high: float, padding: float = 0) -> None:
        self.vb.setYRange(low, high, padding=padding)

    def viewRange(self) -> list:
        return self.vb.viewRange()

    def showGrid(self, x: bool, y: bool, alpha: float) -> None:
        for name, on in (("bottom", x), ("left", y)):
            self.axes[name].setGrid(int(alpha * 255) if on else False)

    def setLabel(self, name: str, text: str) -> None:
        self.axes[name].setLabel(text)
