"""A memory timeline per GPU (pyqtgraph), in one of two styles.

- "stacked" (the default): what fills the card, process by process, the
  largest at the bottom and the small ones as "others (n)", which opens on a
  click (ui/timeline/timeline_stack.py);
- "lines": one curve per process identity (ui/timeline/timeline_lines.py).

Both draw the GPU's total used and its capacity (dashed). Every process has
one style -- colour x dash, from the ColourBook -- in its line, its band and
its table swatch. The legend (ui/timeline/timeline_legend.py) names the processes by
memory, largest first, always including those with an active alert. Axis in
GiB (2**30 bytes). What is drawn comes from each process's latest point
(ui/timeline/timeline_points.py).
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
from PySide6.QtWidgets import QGraphicsItem

from vramscope.core.samples import ProcessIdentity
from vramscope.core.processes.process_groups import group_key, group_name, is_group, units
from vramscope.core.processes.stacking import align, corners, lines_drawn, nanmax
from vramscope.core.store.store import PROCESSES_USED, Store, gpu_key, mig_key, proc_identity
from vramscope.core.units import GiB
from vramscope.core.settings.view_options import PlotStyle
from vramscope.ui.qt import pens, theme
from vramscope.ui.monitor.legend_text import LEGEND_WIDTH
from vramscope.ui.monitor.time_axis import TimeAxis
from vramscope.ui.monitor.time_plot import TimePlot
from vramscope.ui.timeline.timeline_markers import AlertMarkers
from vramscope.ui.timeline.timeline_legend import (
    CAPACITY,
    TOTAL,
    TimelineLegend,
    lines_shown,
    process_label,
    rows_that_fit,
)
from vramscope.ui.timeline.timeline_lines import ProcessLines, curve
from vramscope.ui.timeline.timeline_points import sort_points
from vramscope.ui.timeline.timeline_stack import OTHERS, StackedBands

MIN_SPAN = 60.0  # seconds: a fresh session's plot spans at least this, then grows to the window
HEADROOM = 1.12  # y range above the peak: room for the alert markers' labels


class GpuTimeline(pg.GraphicsLayoutWidget):
    """The plot on the left, its legend in a column on the right (never over a curve)."""

    def __init__(self, index: int, colours: pens.ColourBook, parent=None, mig_uuid: str | None = None):
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
        plot = self.plot = TimePlot(TimeAxis(orientation="bottom"), 44)
        self.addItem(plot, row=0, col=0)
        # The GiB axis changes when the y range does, not when time scrolls: paint it
        # from a cached pixmap (pyqtgraph replays its text on every paint otherwise).
        plot.getAxis("left").setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        s = theme.current()
        self.legend = TimelineLegend()
        self.addItem(self.legend.item, row=0, col=1)
        self.ci.layout.setAlignment(self.legend.item, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.ci.layout.setColumnFixedWidth(1, LEGEND_WIDTH)
        self.ci.layout.setColumnStretchFactor(0, 1)

        self.capacity_curve = curve(pens.pen(s.CAPACITY, 1.5, dashed=True))
        self.used_curve = curve(pens.pen(s.TOTAL_USED, 2.0))
        plot.addItem(self.capacity_curve)
        plot.addItem(self.used_curve)
        self.lines = ProcessLines(plot, colours, self.legend.forget)  # lines style
        self.stack = StackedBands(plot, colours)  # stacked style
        self._highlighted: object = None
        self._y_max: float | None = None
        self._x_range: tuple[float, float] | None = None
        self.markers = AlertMarkers(plot)
        self._last = None  # the last update_from arguments (a click on "others" redraws)
        self._rows_fitted = 0
        self._units: dict[tuple, tuple] = {}  # layer key -> the processes it stands for
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
        rows = rows_that_fit(self.height())
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
        self.lines.set_visible(not stacked)
        if self._last is not None:
            self.update_from(*self._last)

    def apply_theme(self, s: theme.Scheme) -> None:
        """Re-colour from scheme ``s`` (a live theme switch)."""
        theme.colour_plot(self, s)
        self.capacity_curve.setPen(pens.pen(s.CAPACITY, 1.5, dashed=True))
        self.used_curve.setPen(pens.pen(s.TOTAL_USED, 2.0))
        self.legend.restyle(s)
        self.lines.restyle()
        self.stack.restyle(self._unit_identity)
        self.markers.restyle()
        if self._last is not None:
            self.update_from(*self._last)

    # -- data ---------------------------------------------------------------------
    def refresh_figures(self, store: Store) -> None:
        """The legend's figures from the store's latest points (timeline_legend.py)."""
        self.legend.refresh_figures(store.process_points(self.index))

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
            points = {k: p for k, p in points.items() if proc_identity(k) in self.members}
        keys = list(points)
        alive, ended, not_plotted = sort_points(points, series, since, t_end)
        self._rows_fitted = rows_that_fit(self.height())
        room = self._rows_fitted - 2 - (2 if not_plotted else 0)  # total + capacity, n/a note
        must = {k for k in alive if proc_identity(k) in self.alerted}
        if self.selected is not None and self.selected in alive:
            must.add(self.selected)
        if self.style == PlotStyle.LINES:
            drawn = lines_drawn(alive, ended, must)
            top, added = self.lines.update(series, drawn, since)
            peak = max(peak, top)
            wanted = self._highlighted
            if wanted in added and self.selected != wanted:  # selected before it was drawn
                self._highlighted = object()
                self.highlight(wanted)
            shown = lines_shown(alive, ended, must, max(1, room - 1))
            hidden = len(alive) + len(ended) - len(shown)
            entries = [
                (k, self.lines.curves[k], process_label(k, labels), alive.get(k), k in ended) for k in shown
            ]
        else:
            self.lines.keep_only(keys)
            px = int(self.plot.vb.width()) or 600
            everyone = None  # all processes' sum: "others" without reading each of them
            if self.mig_uuid is None:
                everyone = series(gpu_key(self.index, PROCESSES_USED))
                if not len(everyone[0]):
                    everyone = None  # (a store filled without it: sum the processes)
            found = units(((k, kin.get(proc_identity(k))) for k in alive), must, self.opened)
            self._units = found
            self._unit_by_key = {k: u for u, ks in found.items() if is_group(u) for k in ks}
            self._opened_by_key = {
                k: group_key(kin[proc_identity(k)])
                for k in alive
                if kin.get(proc_identity(k)) is not None and group_key(kin[proc_identity(k)]) in self.opened
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
                    entries.append((k, band.sample, process_label(k, labels), alive.get(k), False))
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
        unit_keys = {} if self.style == PlotStyle.LINES else dict(found)
        unit_keys[OTHERS] = tuple(k for g in getattr(self.stack, "grouped", ()) for k in unit_keys.get(g, ()))
        sources = [unit_keys.get(k, (k,) if k in alive else ()) for k, *_rest in entries]
        self.legend.show(entries, hidden, sorted(not_plotted, key=lambda k: k[2]), labels, sources)

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

    def set_window(self, t0: float, t1: float) -> None:
        if t1 <= t0:
            t1 = t0 + 1.0
        if self._x_range != (t0, t1):
            self._x_range = (t0, t1)
            self.plot.setXRange(t0, t1, padding=0)

    # -- alert markers (ui/timeline/timeline_markers.py) -----------------------------------------
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
            return  # unchanged; curves added since were given the right pen
        self._highlighted = key
        known = (
            key in self.lines.curves
            or key in self.stack.bands
            or key in self.stack.grouped
            or key in self._unit_by_key
        )
        self.selected = key if known else None
        if key is not None and self.selected is None:
            self.selected = ("none",)  # selection is on another GPU: dim everything here
        self.lines.selected = self.selected
        self.lines.restyle()
        self.stack.selected = self.selected
        if self.style == PlotStyle.STACKED and self._last is not None:
            self.update_from(*self._last)  # the selected process gets its own band

    # -- groups and "others (n)" -------------------------------------------------------
    def _unit_of(self, key: tuple) -> tuple:
        """The layer a process is drawn in: its own, or its group's."""
        return self._unit_by_key.get(key, key)

    def _unit_identity(self, unit: tuple) -> ProcessIdentity:
        """A group is drawn in the style of its lowest pid (as the table's group row)."""
        if is_group(unit):
            return proc_identity(min(self._units[unit], key=lambda k: k[2]))
        return proc_identity(unit)

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
        row = self.legend.key_at(pos, lambda key: key == OTHERS or is_group(key))
        if row == OTHERS:
            self.toggle_others()
            return
        if row is not None:
            self.toggle_group(row)
            return
        if not self.plot.vb.sceneBoundingRect().contains(pos):
            return
        p = self.plot.vb.mapSceneToView(pos)
        key = self.stack.layer_at(p.x(), p.y() * GiB)
        if is_group(key) or key in self._opened_by_key:
            self.toggle_group(self._opened_by_key.get(key, key))
        elif key == OTHERS or (self.stack.expanded and key is not None):
            self.toggle_others()
