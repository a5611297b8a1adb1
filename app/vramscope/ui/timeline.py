"""A memory timeline per GPU (pyqtgraph).

Curves: the GPU's total used, its capacity (dashed) and one curve per process
identity, coloured from the ColourBook. Axis in GiB (2**30 bytes), labelled
so. Following pyqtgraph's practice for long series, every curve uses peak
downsampling and clipToView, and the x range is set by the app from the time
window -- never auto-ranged -- so 24 hours of history stay cheap to draw.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QSizePolicy

from vramscope.core.samples import ProcessIdentity
from vramscope.core.store import Store, gpu_key
from vramscope.core.units import GiB, MiB
from vramscope.ui import theme

DIMMED_ALPHA = 60
LEGEND_WIDTH = 250
LEGEND_PROCESSES = 8  # the largest N by current memory; the table lists all


def _curve(pen) -> pg.PlotDataItem:
    item = pg.PlotDataItem(pen=pen, connect="finite")
    item.setDownsampling(auto=True, method="peak")
    item.setClipToView(True)
    return item


class GpuTimeline(pg.GraphicsLayoutWidget):
    """The plot on the left, its legend in a column on the right (never over a curve)."""

    def __init__(self, index: int, colours: theme.ColourBook, parent=None):
        super().__init__(parent)
        self.index = index
        self.colours = colours
        self.selected: tuple | None = None
        self.ci.layout.setContentsMargins(2, 6, 6, 2)
        plot = self.plot = self.addPlot(
            row=0, col=0, axisItems={"bottom": pg.DateAxisItem(orientation="bottom")})
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setMouseEnabled(x=False, y=False)
        plot.disableAutoRange()
        plot.showGrid(x=True, y=True, alpha=theme.GRID_ALPHA)
        plot.setLabel("left", "device memory (GiB)")
        plot.getAxis("left").setWidth(58)
        self.legend = pg.LegendItem(verSpacing=-4, labelTextColor=theme.TEXT,
                                    labelTextSize="9pt")
        self.legend.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Maximum)
        self.legend.setMinimumWidth(LEGEND_WIDTH)
        self.legend.setMaximumWidth(LEGEND_WIDTH)
        self.addItem(self.legend, row=0, col=1)
        self.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.ci.layout.setColumnFixedWidth(1, LEGEND_WIDTH)
        self.ci.layout.setColumnStretchFactor(0, 1)
        self.more = pg.LabelItem("", color=theme.MUTED, size="8.5pt", justify="left")

        self.capacity_curve = _curve(theme.pen(theme.CAPACITY, 1.5, dashed=True))
        self.used_curve = _curve(theme.pen(theme.TOTAL_USED, 2.2))
        plot.addItem(self.capacity_curve)
        plot.addItem(self.used_curve)
        self.legend.addItem(self.used_curve, "GPU total used")
        self.legend.addItem(self.capacity_curve, "capacity")
        self.proc_curves: dict[tuple, pg.PlotDataItem] = {}
        self._legend_keys: list[tuple] = []
        self._legend_note = ""
        self._legend_total = 0
        self._highlighted: object = None
        self._y_max: float | None = None
        self._x_range: tuple[float, float] | None = None
        self._markers: dict[tuple, pg.InfiniteLine] = {}

    def sizeHint(self):
        return QSize(600, 220)

    # -- data ---------------------------------------------------------------------
    def update_from(self, store: Store, since: float | None, t_end: float,
                    labels: dict[ProcessIdentity, str]) -> None:
        """Pull this GPU's series from the store (GUI thread; no NVML here)."""
        tu, vu = store.series(gpu_key(self.index, "used"), since)
        tt, vt = store.series(gpu_key(self.index, "total"), since)
        self.used_curve.setData(tu, vu / GiB)
        self.capacity_curve.setData(tt, vt / GiB)
        peak = _nanmax(vt, _nanmax(vu, 0.0))

        keys = store.process_keys(self.index)  # in order of first sight
        key_set = set(keys)
        for key in list(self.proc_curves):
            if key not in key_set:
                self._drop(key)
        alive: dict[tuple, float] = {}  # drawn and still reported: key -> latest bytes
        ended: dict[tuple, float] = {}  # drawn, no longer reported: key -> last time
        not_plotted: list[tuple] = []  # reported, but memory n/a all along: not drawn as 0
        for key in keys:
            t, v = store.series(key, since)
            inside = v if since is None else v[t >= since]
            finite = inside[np.isfinite(inside)]
            now_listed = bool(len(t)) and t[-1] >= t_end - 1e-6
            curve = self.proc_curves.get(key)
            if curve is None and len(finite):
                curve = self._add(key)
            elif curve is not None and not len(finite) and not now_listed:
                self._drop(key)  # ended before the window: no item left behind all day
                curve = None
            if curve is not None:
                curve.setData(t, v / GiB)
                curve.setVisible(bool(len(finite)))
            if len(finite):
                peak = max(peak, float(finite.max()))
                if now_listed:
                    alive[key] = float(v[-1]) if np.isfinite(v[-1]) else -1.0
                else:
                    ended[key] = float(t[-1])
            elif now_listed:
                not_plotted.append(key)
        self._update_legend(self._legend_members(alive, ended), set(ended),
                            sorted(not_plotted, key=lambda k: k[2]), labels)

        self.set_window(since if since is not None else (store.first_time or t_end - 60), t_end)
        y_max = max(1.0, peak / GiB * 1.06)
        if self._y_max is None or not math.isclose(y_max, self._y_max, rel_tol=1e-3):
            self._y_max = y_max
            self.plot.setYRange(0, y_max, padding=0)

    def set_window(self, t0: float, t1: float) -> None:
        if t1 <= t0:
            t1 = t0 + 1.0
        if self._x_range != (t0, t1):
            self._x_range = (t0, t1)
            self.plot.setXRange(t0, t1, padding=0)

    def set_markers(self, markers: dict[tuple, tuple[float, str, str]]) -> None:
        """Vertical markers: key -> (time, colour, label); alerts and OOMs on this GPU."""
        for key in [k for k in self._markers if k not in markers]:
            self.plot.removeItem(self._markers.pop(key))
        for key, (t, colour, label) in markers.items():
            line = self._markers.get(key)
            if line is None:
                line = pg.InfiniteLine(angle=90, movable=False,
                                       pen=theme.pen(colour, 1.2, dashed=True),
                                       label=label, labelOpts={"position": 0.97, "color": colour,
                                                               "anchors": [(0, 0), (0, 0)]})
                self._markers[key] = line
                self.plot.addItem(line, ignoreBounds=True)
            line.setValue(t)

    def marker_times(self) -> list[float]:
        return sorted(line.value() for line in self._markers.values())

    def x_range(self) -> tuple[float, float]:
        return tuple(self.plot.viewRange()[0])

    # -- selection ----------------------------------------------------------------
    def highlight(self, key: tuple | None) -> None:
        """Thicker curve for ``key`` (a store proc key), the others dimmed."""
        if key == self._highlighted:
            return  # unchanged; curves added since were given the right pen in _add
        self._highlighted = key
        self.selected = key if key in self.proc_curves else None
        if key is not None and self.selected is None:
            self.selected = ("none",)  # selection is on another GPU: dim everything here
        for k, curve in self.proc_curves.items():
            curve.setPen(self._pen(k))

    def curve_width(self, key: tuple) -> float:
        return self.proc_curves[key].opts["pen"].widthF()

    def _pen(self, key: tuple):
        colour, dashed = self.colours.style(_identity(key))
        if self.selected is None:
            return theme.pen(colour, 1.6, dashed)
        if key == self.selected:
            return theme.pen(colour, 3.5, dashed)
        return theme.pen(colour, 1.2, dashed, alpha=DIMMED_ALPHA)

    def _add(self, key: tuple) -> pg.PlotDataItem:
        curve = _curve(self._pen(key))
        self.proc_curves[key] = curve
        self.plot.addItem(curve)
        if key == self._highlighted and self.selected != key:  # selected before it was drawn
            self._highlighted = object()
            self.highlight(key)
        return curve

    def _drop(self, key: tuple) -> None:
        curve = self.proc_curves.pop(key)
        if any(k == key for k, _ in self._legend_keys):
            self.legend.removeItem(curve)
            self._legend_keys = [e for e in self._legend_keys if e[0] != key]
        self.plot.removeItem(curve)

    def _legend_members(self, alive: dict[tuple, float], ended: dict[tuple, float]) -> list[tuple]:
        """Which processes the legend names, in a stable order.

        All of them when they fit. Otherwise the largest by current memory, with
        some hysteresis so two processes of about the same size do not swap
        places every tick; ended processes, newest first, only in spare room.
        The order is the order of first sight, so entries do not jump around.
        """
        n = LEGEND_PROCESSES
        self._legend_total = len(alive) + len(ended)
        if self._legend_total <= n:
            members = set(alive) | set(ended)
        else:
            keep = [k for k, _ in self._legend_keys if k in alive]
            rest = sorted((k for k in alive if k not in keep), key=lambda k: -alive[k])
            keep.sort(key=lambda k: alive[k])  # smallest first
            while rest and keep and alive[rest[0]] > 1.25 * max(alive[keep[0]], 0.0) + MiB:
                keep.pop(0)
                keep.append(rest.pop(0))
                keep.sort(key=lambda k: alive[k])
            members = set(keep)
            members |= set(rest[: max(0, n - len(members))])
            if len(members) < n:
                members |= set(sorted(ended, key=lambda k: -ended[k])[: n - len(members)])
        order = [k for k in self.proc_curves if k in members and k in alive]
        return order + sorted((k for k in members if k in ended), key=lambda k: -ended[k])

    def _update_legend(self, shown: list[tuple], ended: set, not_plotted: list[tuple],
                       labels: dict) -> None:
        entries = [(k, _label(k, labels) + (" · ended" if k in ended else "")) for k in shown]
        notes = []
        if self._legend_total > len(shown):
            notes.append(f"+ {self._legend_total - len(shown)} more (see the table)")
        if not_plotted:
            names = ", ".join(_label(k, labels) for k in not_plotted[:3])
            more = f" +{len(not_plotted) - 3}" if len(not_plotted) > 3 else ""
            notes.append(f"memory n/a, not plotted:<br>{names}{more}")
        note = "<br>".join(notes)
        if entries == self._legend_keys and note == self._legend_note:
            return
        for k, _text in self._legend_keys:
            if k in self.proc_curves:
                self.legend.removeItem(self.proc_curves[k])
        if self._legend_note:
            self.legend.layout.removeItem(self.more)
        for k, text in entries:
            self.legend.addItem(self.proc_curves[k], text)
        if note:
            self.more.setText(note)
            self.legend.layout.addItem(self.more, self.legend.layout.rowCount(), 0, 1, 2)
        self.legend.updateSize()
        self._legend_keys = entries
        self._legend_note = note

    def legend_labels(self) -> list[str]:
        return [label.text for _sample, label in self.legend.items]


def _label(key: tuple, labels: dict) -> str:
    return labels.get(_identity(key)) or f"pid {key[2]}"


def _identity(key: tuple) -> ProcessIdentity:
    _, _gpu, pid, start, _metric = key
    return ProcessIdentity(pid, start)


def _nanmax(values: np.ndarray, default: float) -> float:
    if not len(values):
        return default
    finite = values[np.isfinite(values)]
    return max(default, float(finite.max())) if len(finite) else default
