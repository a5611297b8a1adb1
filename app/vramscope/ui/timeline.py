"""A memory timeline per GPU (pyqtgraph), in one of two styles.

- "stacked" (the default): what fills the card, process by process, the
  largest at the bottom and the small ones as "others (n)", which opens on a
  click (ui/timeline_stack.py);
- "lines": one curve per process identity.

Both draw the GPU's total used and its capacity (dashed). Every process has
one style -- colour x dash, from the ColourBook -- in its line, its band and
its table swatch. The legend names the processes by memory, largest first,
always including those with an active alert. Axis in GiB (2**30 bytes).
Following pyqtgraph's practice for long series, curves use peak downsampling
and clipToView, and the x range is set from the time window -- never
auto-ranged -- so 24 hours of history stay cheap to draw. Items are created
once and updated; nothing is re-created per frame.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QGraphicsGridLayout, QGraphicsItem, QSizePolicy

from vramscope.core.samples import ProcessIdentity
from vramscope.core.process_groups import group_key, group_name, is_group, units
from vramscope.core.stacking import align, any_finite, corners, lines_drawn, nanmax
from vramscope.core.store import PROCESSES_USED, Store, gpu_key, mig_key
from vramscope.core.units import GiB
from vramscope.core.view_options import PlotStyle
from vramscope.ui import theme
from vramscope.ui.legend_text import LEGEND_TEXT_SIZE, LEGEND_WIDTH, legend_text
from vramscope.ui.time_axis import TimeAxis
from vramscope.ui.timeline_markers import AlertMarkers
from vramscope.ui.timeline_stack import OTHERS, StackedBands
from vramscope.ui.safe_text import html_text

DIMMED_ALPHA = 60
LEGEND_PROCESSES = 8  # lines style: the largest N by current memory (+ alerted); the table lists all
MIN_SPAN = 60.0  # seconds: a fresh session's plot spans at least this, then grows to the window
LEGEND_ROW = 15  # px per legend row (8.5 pt labels, rows overlap by verSpacing)
LEGEND_MARGIN = 26  # px the legend box adds around its rows
HEADROOM = 1.12
TOTAL, CAPACITY = (
    ("total",),
    ("capacity",),
)  # the legend's first two rows  # y range above the peak: room for the alert markers' labels


def _curve(pen) -> pg.PlotDataItem:
    item = pg.PlotDataItem(pen=pen, connect="finite")
    item.setDownsampling(auto=True, method="peak")
    item.setClipToView(True)
    return item


class GpuTimeline(pg.GraphicsLayoutWidget):
    """The plot on the left, its legend in a column on the right (never over a curve)."""

    def __init__(self, index: int, colours: theme.ColourBook, parent=None, mig_uuid: str | None = None):
        super().__init__(parent)
        self.index = index
        # a MIG slice's timeline: the slice's used/capacity and only its processes
        self.mig_uuid = mig_uuid
        self.members: frozenset | None = None  # identities on the slice (None: every process)
        self.colours = colours
        self.selected: tuple | None = None
        self.style = PlotStyle.STACKED
        self.alerted: frozenset = frozenset()  # identities with an active alert
        self.ci.layout.setContentsMargins(2, 4, 4, 2)
        plot = self.plot = self.addPlot(row=0, col=0, axisItems={"bottom": TimeAxis(orientation="bottom")})
        theme.fixed_plot(plot, 44)
        # The GiB axis changes when the y range does, not when time scrolls: paint it
        # from a cached pixmap (pyqtgraph replays its text on every paint otherwise).
        plot.getAxis("left").setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        s = theme.current()
        self.legend = pg.LegendItem(
            verSpacing=-6, labelTextColor=s.TEXT, labelTextSize=f"{LEGEND_TEXT_SIZE}pt"
        )
        self.legend.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Maximum)
        self.legend.setMinimumWidth(LEGEND_WIDTH)
        self.legend.setMaximumWidth(LEGEND_WIDTH)
        self.addItem(self.legend, row=0, col=1)
        self.legend.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)  # (as the axis)
        self.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.ci.layout.setColumnFixedWidth(1, LEGEND_WIDTH)
        self.ci.layout.setColumnStretchFactor(0, 1)
        self.more = pg.LabelItem("", color=s.MUTED, size="8pt", justify="left")

        self.capacity_curve = _curve(theme.pen(s.CAPACITY, 1.5, dashed=True))
        self.used_curve = _curve(theme.pen(s.TOTAL_USED, 2.0))
        plot.addItem(self.capacity_curve)
        plot.addItem(self.used_curve)
        self.proc_curves: dict[tuple, pg.PlotDataItem] = {}  # lines style
        self.stack = StackedBands(plot, colours)  # stacked style
        self._legend: list[tuple] = []  # (key, name) shown, in order
        self._blank = _blank()  # the sample of a row drawn without a line
        self._legend_note = ""
        self._highlighted: object = None
        self._y_max: float | None = None
        self._x_range: tuple[float, float] | None = None
        self.markers = AlertMarkers(plot)
        self._last = None  # the last update_from arguments (a click on "others" redraws)
        self._rows_fitted = 0
        self._units: dict[tuple, list] = {}  # layer key -> the processes it stands for
        self._unit_by_key: dict[tuple, tuple] = {}  # a grouped process -> its group's layer
        self._opened_by_key: dict[tuple, tuple] = {}  # a process of an opened group -> the group
        self.opened: set = set()  # group layers the user opened into their processes
        plot.scene().sigMouseClicked.connect(self._clicked)
        theme.follow(self, self.apply_theme)

    def sizeHint(self):
        return QSize(600, 180)

    def paintEvent(self, event) -> None:
        super().paintEvent(event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        rows = self.legend_rows()
        if getattr(self, "_last", None) is not None and rows != self._rows_fitted:
            self.update_from(*self._last)  # the legend's room changed: fewer or more names
            # once more: the first pass sized the layout while the old, longer legend
            # held it taller than the widget (its plot and axes then cut at the bottom)
            super().resizeEvent(event)

    # -- style --------------------------------------------------------------------
    def set_style(self, style: str) -> None:
        if style == self.style:
            return
        self.style = style
        stacked = style == PlotStyle.STACKED
        self.stack.set_visible(stacked)
        for curve in self.proc_curves.values():
            curve.setVisible(not stacked)
        if self._last is not None:
            self.update_from(*self._last)

    def apply_theme(self, s: theme.Scheme) -> None:
        """Re-colour from scheme ``s`` (a live theme switch)."""
        theme.colour_plot(self, s)
        self.capacity_curve.setPen(theme.pen(s.CAPACITY, 1.5, dashed=True))
        self.used_curve.setPen(theme.pen(s.TOTAL_USED, 2.0))
        theme.colour_legend(self.legend, s.TEXT)
        self.more.setText(self.more.text, color=s.MUTED)
        for key, curve in self.proc_curves.items():
            curve.setPen(self._pen(key))
        self.stack.restyle(self._unit_identity)
        self.markers.restyle()
        if self._last is not None:
            self.update_from(*self._last)

    # -- data ---------------------------------------------------------------------
    def update_from(
        self,
        store: Store,
        since: float | None,
        t_end: float,
        labels: dict[ProcessIdentity, str],
        kin: dict | None = None,
    ) -> None:
        """Pull this GPU's series from the store (GUI thread; no NVML here).
        ``kin``: identity -> what groups it with others (core/process_groups.kin_of)."""
        self._last = (store, since, t_end, labels, kin)
        kin = kin or {}

        def series(key):  # up to t_end: a redraw while paused shows the same moment
            t, v = store.series(key, since)
            if len(t) and t[-1] > t_end:
                n = int(np.searchsorted(t, t_end, side="right"))
                t, v = t[:n], v[:n]
            return t, v

        if self.mig_uuid is None:
            tu, vu = series(gpu_key(self.index, "used"))
            tt, vt = series(gpu_key(self.index, "total"))
        else:
            tu, vu = series(mig_key(self.index, self.mig_uuid, "used"))
            tt, vt = series(mig_key(self.index, self.mig_uuid, "total"))
        self.used_curve.setData(*corners(tu, vu / GiB))
        self.capacity_curve.setData(*corners(tt, vt / GiB))
        peak = nanmax(vt, nanmax(vu, 0.0))

        # Each process's latest point (one read), so choosing what to draw costs
        # O(processes) dictionary work and only the drawn series are read in full.
        points = store.process_points(self.index)  # in order of first sight
        if self.members is not None:
            points = {k: p for k, p in points.items() if _identity_of(k) in self.members}
        keys = list(points)
        alive: dict[tuple, float] = {}  # reported now, with a figure: key -> latest bytes
        ended: dict[tuple, float] = {}  # in the window, no longer reported: key -> last time
        not_plotted: list[tuple] = []  # reported, but memory n/a all along: not drawn as 0
        for key, (last_t, last_v) in points.items():
            if last_t > t_end + 1e-6:  # paused: the series as it was at t_end
                t, v = series(key)
                if not len(t):
                    continue
                last_t, last_v = float(t[-1]), float(v[-1])
            if since is not None and last_t < since:
                continue  # ended before the window
            now_listed = last_t >= t_end - 1e-6
            finite = math.isfinite(last_v) or any_finite(*series(key), since)
            if not finite:
                if now_listed:
                    not_plotted.append(key)
            elif now_listed:
                alive[key] = last_v if math.isfinite(last_v) else 0.0
            else:
                ended[key] = last_t
        self._rows_fitted = self.legend_rows()
        room = self._rows_fitted - 2 - (2 if not_plotted else 0)  # total + capacity, n/a note
        must = {k for k in alive if _identity_of(k) in self.alerted}
        if self.selected is not None and self.selected in alive:
            must.add(self.selected)
        if self.style == PlotStyle.LINES:
            drawn = lines_drawn(alive, ended, must)
            peak = max(peak, self._update_lines(series, drawn, since))
            shown = self._legend_lines(alive, ended, must, max(1, room - 1))
            hidden = len(alive) + len(ended) - len(shown)
            entries = [(k, self.proc_curves[k], _label(k, labels), alive.get(k), k in ended) for k in shown]
        else:
            self._drop_lines(keys)
            px = int(self.plot.vb.width()) or 600
            everyone = None  # all processes' sum: "others" without reading each of them
            if self.mig_uuid is None:
                everyone = series(gpu_key(self.index, PROCESSES_USED))
                if not len(everyone[0]):
                    everyone = None  # (a store filled without it: sum the processes)
            found = units(((k, kin.get(_identity_of(k))) for k in alive), must, self.opened)
            self._units = found
            self._unit_by_key = {k: u for u, ks in found.items() if is_group(u) for k in ks}
            self._opened_by_key = {
                k: group_key(kin[_identity_of(k)])
                for k in alive
                if kin.get(_identity_of(k)) is not None and group_key(kin[_identity_of(k)]) in self.opened
            }
            unit_alive = {u: sum(alive[k] for k in found[u]) for u in found}
            first_seen = list(dict.fromkeys(self._unit_of(k) for k in keys))

            def unit_series(unit):
                if not is_group(unit):
                    return series(unit)
                return tu, sum((align(tu, *series(k)) for k in found[unit]), np.zeros(len(tu)))

            top = self.stack.update(
                unit_series,
                tu,
                unit_alive,
                list(ended),
                first_seen,
                must,
                max(px, 100),
                self._unit_identity,
                shown=max(1, room - 1),
                everyone=everyone,
            )
            peak = max(peak, top)
            hidden = 0
            entries = []
            for k in reversed(self.stack.order):  # top of the stack first
                band = self.stack.bands[k]
                if k == OTHERS:
                    n = sum(len(found.get(g, ())) for g in self.stack.grouped)
                    gone = len([g for g in self.stack.grouped if g not in found])
                    name = (
                        f"others ({n}{f', {gone} ended' if gone else ''}) ▸"
                        if n
                        else f"ended in the window ({gone}) ▸"
                    )
                    value = sum(unit_alive.get(g, 0.0) for g in self.stack.grouped) if n else None
                    entries.append((k, band.sample, name, value, False))
                elif is_group(k):
                    name = group_name(k, len(found[k])) + " ▸"
                    entries.append((k, band.sample, name, unit_alive[k], False))
                else:
                    entries.append((k, band.sample, _label(k, labels), alive.get(k), False))
            entries.sort(key=lambda e: -(e[3] or 0.0) if e[0] != OTHERS else 1.0)
            if self.stack.expanded and len(alive) > 1:
                entries.append((None, None, "click a band to group the small ones", None, False))
        entries = [
            (
                TOTAL,
                self.used_curve,
                "GPU total used" if self.mig_uuid is None else "slice used",
                None,
                False,
            ),
            (CAPACITY, self.capacity_curve, "capacity", None, False),
        ] + entries
        self._update_legend(entries, hidden, sorted(not_plotted, key=lambda k: k[2]), labels)

        t0 = since if since is not None else (store.first_time or t_end - MIN_SPAN)
        if store.first_time is not None:
            t0 = max(t0, store.first_time)  # a fresh session fills the plot, then scrolls
        # a time window spans at least MIN_SPAN; "all" is the session, however short
        self.set_window(
            t0 if since is None and store.first_time is not None else min(t0, t_end - MIN_SPAN), t_end
        )
        y_max = max(1.0, peak / GiB * HEADROOM)
        if self._y_max is None or not math.isclose(y_max, self._y_max, rel_tol=1e-3):
            self._y_max = y_max
            self.plot.setYRange(0, y_max, padding=0)
        self.markers.place_labels(self._x_range)
        # the new view now, not at paint time: the alert markers' labels then move
        # before the plot is painted, not in a second paint right after it
        self.plot.vb.updateMatrix()

    def _update_lines(self, series, drawn: list, since: float | None) -> float:
        """Curves for ``drawn`` (others dropped); returns their peak in the window."""
        wanted = set(drawn)
        for key in [k for k in self.proc_curves if k not in wanted]:
            self._drop(key)  # ended, or no longer among the drawn: no item left behind
        peak = 0.0
        for key in drawn:
            curve = self.proc_curves.get(key)
            if curve is None:
                curve = self._add(key)
            t, v = series(key)
            curve.setData(*corners(t, v / GiB))
            curve.setVisible(True)
            peak = nanmax(v if since is None else v[t >= since], peak)
        return peak

    def _drop_lines(self, keys) -> None:
        key_set = set(keys)
        for key in [k for k in self.proc_curves if k not in key_set]:
            self._drop(key)

    def set_window(self, t0: float, t1: float) -> None:
        if t1 <= t0:
            t1 = t0 + 1.0
        if self._x_range != (t0, t1):
            self._x_range = (t0, t1)
            self.plot.setXRange(t0, t1, padding=0)

    # -- alert markers (ui/timeline_markers.py) -----------------------------------------
    def set_markers(self, markers: dict[tuple, tuple[float, str, str]]) -> None:
        """Alert markers on this GPU: key -> (time, colour role, label) (AlertMarkers.set)."""
        if self.markers.set(markers):  # (the labels move with the time window, in update_from)
            self.markers.place_labels(self._x_range)

    def marker_times(self) -> list[float]:
        """Times of the active alerts' markers."""
        return self.markers.times()

    def x_range(self) -> tuple[float, float]:
        return tuple(self.plot.viewRange()[0])

    # -- selection ----------------------------------------------------------------
    def highlight(self, key: tuple | None) -> None:
        """Thicker curve (or band) for ``key`` (a store proc key), the others dimmed."""
        if key == self._highlighted:
            return  # unchanged; curves added since were given the right pen in _add
        self._highlighted = key
        known = (
            key in self.proc_curves
            or key in self.stack.bands
            or key in self.stack.grouped
            or key in self._unit_by_key
        )
        self.selected = key if known else None
        if key is not None and self.selected is None:
            self.selected = ("none",)  # selection is on another GPU: dim everything here
        for k, curve in self.proc_curves.items():
            curve.setPen(self._pen(k))
        self.stack.selected = self.selected
        if self.style == PlotStyle.STACKED and self._last is not None:
            self.update_from(*self._last)  # the selected process gets its own band

    def curve_width(self, key: tuple) -> float:
        return self.proc_curves[key].opts["pen"].widthF()

    def _pen(self, key: tuple):
        colour, dash = self.colours.style(_identity_of(key))
        if self.selected is None:
            return theme.pen(colour, 1.6, dash)
        if key == self.selected:
            return theme.pen(colour, 3.5, dash)
        return theme.pen(colour, 1.2, dash, alpha=DIMMED_ALPHA)

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
        if any(k == key for k, _ in self._legend):
            self._clear_legend()
        self.plot.removeItem(curve)

    # -- groups and "others (n)" -------------------------------------------------------
    def _unit_of(self, key: tuple) -> tuple:
        """The layer a process is drawn in: its own, or its group's."""
        return self._unit_by_key.get(key, key)

    def _unit_identity(self, unit: tuple) -> ProcessIdentity:
        """A group is drawn in the style of its lowest pid (as the table's group row)."""
        if is_group(unit):
            return _identity_of(min(self._units[unit], key=lambda k: k[2]))
        return _identity_of(unit)

    def toggle_group(self, unit: tuple) -> None:
        """A group's band or legend row clicked: its processes drawn on their own, or folded."""
        self.opened ^= {unit}
        if self._last is not None:
            self.update_from(*self._last)

    def toggle_others(self) -> None:
        self.stack.expanded = not self.stack.expanded
        if self._last is not None:
            self.update_from(*self._last)

    def _clicked(self, event) -> None:
        if self.style != PlotStyle.STACKED:
            return
        pos = event.scenePos()
        for (key, _name), (_sample, label) in zip(self._legend, self.legend.items):
            if key == OTHERS and label.sceneBoundingRect().contains(pos):
                self.toggle_others()
                return
            if is_group(key) and label.sceneBoundingRect().contains(pos):
                self.toggle_group(key)
                return
        if not self.plot.vb.sceneBoundingRect().contains(pos):
            return
        p = self.plot.vb.mapSceneToView(pos)
        key = self.stack.layer_at(p.x(), p.y() * GiB)
        if is_group(key) or key in self._opened_by_key:
            self.toggle_group(self._opened_by_key.get(key, key))
        elif key == OTHERS or (self.stack.expanded and key is not None):
            self.toggle_others()

    # -- legend -----------------------------------------------------------------------
    def legend_rows(self) -> int:
        """How many legend rows fit beside the plot at its current height."""
        return max(4, int((self.height() - LEGEND_MARGIN) / LEGEND_ROW))

    def _legend_lines(self, alive: dict, ended: dict, must: set, fit: int) -> list[tuple]:
        """Lines style: the largest by memory now (+ alerted), ended ones in spare room."""
        n = min(LEGEND_PROCESSES, fit)
        order = sorted(alive, key=lambda k: -alive[k])
        musts = [k for k in order if k in must]
        fill = [k for k in order if k not in must][: max(0, n - len(musts))]
        shown = [k for k in order if k in musts or k in fill]
        room = n - len(shown)
        if room > 0:
            shown += sorted(ended, key=lambda k: -ended[k])[:room]
        return shown

    def _update_legend(self, entries, hidden: int, not_plotted: list, labels: dict) -> None:
        """entries: (key, sample item, name, bytes now or None, ended)."""
        rows = [(k, name + (" · ended" if ended else "")) for k, _s, name, _v, ended in entries]
        texts = [legend_text(name, v, ended) for _k, _s, name, v, ended in entries]
        notes = []
        if hidden > 0:
            notes.append(f"+ {hidden} more (see the table)")
        if not_plotted:
            names = ", ".join(_label(k, labels) for k in not_plotted[:3])
            more = f" +{len(not_plotted) - 3}" if len(not_plotted) > 3 else ""
            notes.append(f"memory n/a, not plotted:<br>{names}{more}")
        note = "<br>".join(notes)
        if len(rows) != len(self._legend):
            self._clear_legend()
            for (k, sample, *_rest), text in zip(entries, texts):
                self.legend.addItem(sample if sample is not None else self._blank, text)
            self.legend.updateSize()
        else:  # as many rows as shown: each row takes its new process in place
            for (shown, label), (_k, sample, *_rest), text in zip(self.legend.items, entries, texts):
                sample = sample if sample is not None else self._blank
                if shown.item is not sample:
                    shown.item = sample
                    shown.update()
                if label.text != text:
                    label.setText(text)
        self._legend = rows
        if note != self._legend_note:
            if self._legend_note:
                self.legend.layout.removeItem(self.more)
            if note:
                self.more.setText(note, color=theme.current().MUTED)
                self.legend.layout.addItem(self.more, self.legend.layout.rowCount(), 0, 1, 2)
            self._legend_note = note
            self.legend.updateSize()

    def _clear_legend(self) -> None:
        self.legend.clear()
        if self._legend_note:
            self.legend.layout.removeItem(self.more)
        # a fresh grid: pyqtgraph appends after the old (now empty) rows, which keep height
        old = self.legend.layout
        grid = QGraphicsGridLayout()
        grid.setVerticalSpacing(old.verticalSpacing())
        grid.setHorizontalSpacing(old.horizontalSpacing())
        grid.setContentsMargins(*old.getContentsMargins())
        self.legend.layout = grid
        self.legend.setLayout(grid)
        self._legend = []
        self._legend_note = ""

    def legend_labels(self) -> list[str]:
        """The names the legend shows, in order (memory figures left out)."""
        return [name for k, name in self._legend if k not in (TOTAL, CAPACITY)]


def _blank() -> pg.PlotDataItem:
    return pg.PlotDataItem(pen=None)


def _label(key: tuple, labels: dict) -> str:
    """A process's name for the legend, which pyqtgraph renders as HTML: escaped."""
    return html_text(labels.get(_identity_of(key)) or f"pid {key[2]}")


def _identity_of(key: tuple) -> ProcessIdentity:
    _, _gpu, pid, start, _metric = key
    return ProcessIdentity(pid, start)
