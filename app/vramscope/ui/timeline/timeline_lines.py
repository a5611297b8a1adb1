"""The "lines" style of a GPU's timeline: one curve per process, in its style
(colour x dash, from the ColourBook); the selected process thicker, the others
dimmed. Curves are made when a process is first drawn and dropped when it no
longer is -- no item is left behind.

Following pyqtgraph's practice for long series, curves use peak downsampling
and clipToView (``curve``), the timeline's total and capacity included.
"""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg

from vramscope.core.processes.stacking import corners, nanmax
from vramscope.core.store.store import proc_identity
from vramscope.core.units import GiB
from vramscope.ui.qt import pens

DIMMED_ALPHA = 60


def curve(pen) -> pg.PlotDataItem:
    item = pg.PlotDataItem(pen=pen, connect="finite")
    item.setDownsampling(auto=True, method="peak")
    item.setClipToView(True)
    return item


class ProcessLines:
    """``forget(key)``: a dropped curve's legend row goes too. ``selected``: the
    selected store key, ("none",) when it is on another GPU, None for no selection."""

    def __init__(self, plot, colours: pens.ColourBook, forget: Callable[[tuple], None]):
        self.plot, self.colours, self._forget = plot, colours, forget
        self.curves: dict[tuple, pg.PlotDataItem] = {}
        self.selected: tuple | None = None

    def update(self, series, drawn: list, since: float | None) -> tuple[float, list]:
        """Curves for ``drawn`` (the others dropped); returns their peak in the window
        and the keys given a curve just now."""
        wanted = set(drawn)
        for key in [k for k in self.curves if k not in wanted]:
            self.drop(key)  # ended, or no longer among the drawn: no item left behind
        peak, added = 0.0, []
        for key in drawn:
            item = self.curves.get(key)
            if item is None:
                item = self._add(key)
                added.append(key)
            t, v = series(key)
            item.setData(*corners(t, v / GiB))
            item.setVisible(True)
            peak = nanmax(v if since is None else v[t >= since], peak)
        return peak, added

    def keep_only(self, keys) -> None:
        """Drop the curves of processes not among ``keys`` (the stacked style's processes)."""
        key_set = set(keys)
        for key in [k for k in self.curves if k not in key_set]:
            self.drop(key)

    def set_visible(self, on: bool) -> None:
        for item in self.curves.values():
            item.setVisible(on)

    def restyle(self) -> None:
        """Every curve's pen again (a new selection, a theme switch)."""
        for key, item in self.curves.items():
            item.setPen(self.pen(key))

    def width(self, key: tuple) -> float:
        return self.curves[key].opts["pen"].widthF()

    def pen(self, key: tuple):
        colour, dash = self.colours.style(proc_identity(key))
        if self.selected is None:
            return pens.pen(colour, 1.6, dash)
        if key == self.selected:
            return pens.pen(colour, 3.5, dash)
        return pens.pen(colour, 1.2, dash, alpha=DIMMED_ALPHA)

    def _add(self, key: tuple) -> pg.PlotDataItem:
        item = curve(self.pen(key))
        self.curves[key] = item
        self.plot.addItem(item)
        return item

    def drop(self, key: tuple) -> None:
        item = self.curves.pop(key)
        self._forget(key)
        self.plot.removeItem(item)
