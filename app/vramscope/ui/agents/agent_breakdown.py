"""One agent device's memory broken into its buckets at a moment: at the real
peak of the last measured step ("≥" where only a lower bound; the end of a
phase, titled as such, where no phase peak is known; the latest sample when
no phase was measured) and, after an OOM, at the OOM -- as stacked bars
beside the device's timeline (ui/agents/agent_device.py) and a legend table with
the figures.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from vramscope.core.units import GiB, MiB, fmt_bytes
from vramscope.ui.qt import theme
from vramscope.ui.agents.agent_texts import BUCKETS, end_title, peak_title
from vramscope.ui.qt.safe_text import html_text


def value_at(t: np.ndarray, v: np.ndarray, when: float) -> float | None:
    """The value at ``when`` (the last sample at or before it); None where that
    sample is n/a -- never an older figure, so the legend says n/a exactly where
    the areas have nothing to draw (a "0 B" there would contradict them)."""
    i = int(np.searchsorted(t, when, side="right"))
    if i == 0 or not np.isfinite(v[i - 1]):
        return None
    return float(v[i - 1])


def peak_column(series, dev, latest: dict, when: dict, peaks: dict | None) -> tuple[str, dict]:
    """The buckets at the real peak of the last measured step (its highest phase
    peak, "≥" where a lower bound); at the highest phase end, titled as such, where
    no phase peak is known; the latest sample when no phase was measured (a CPU
    run, no registered model)."""
    now_b = dev.buckets.as_dict() if dev.buckets is not None else {}
    known = {p: v for p, v in latest.items() if v is not None}
    if not known:
        return ("latest", now_b)
    if peaks:
        top = max(peaks, key=lambda p: peaks[p][0])
        value, title = peaks[top][0], peak_title(top, peaks[top][1] is None)
    else:
        top = max(known, key=lambda p: known[p])
        value, title = known[top], end_title(top)
    t = when[top]
    at = {}
    for field in ("weights", "gradients", "optimizer_state", "outside_pytorch"):
        tt, vv = series(field, start=t - 3600.0)
        at[field] = value_at(tt, vv, t) if len(tt) else now_b.get(field)
    fixed = sum(v for k, v in at.items() if k != "outside_pytorch" and v)
    at["other_allocated"] = max(0.0, value - fixed)  # activations + temporaries then
    tr, vr = series("reserved", start=t - 3600.0)
    reserved = value_at(tr, vr, t) if len(tr) else None
    at["cached_free"] = None if reserved is None else max(0.0, reserved - value)
    return (title, at)


def legend_html(columns, s: theme.Scheme, note: str | None = None) -> str:
    rows = []
    for (field, label), colour in zip(BUCKETS, s.BUCKET_COLOURS):
        cells = "".join(f"<td align='right'>{fmt_bytes(b.get(field))}</td>" for _t, b in columns)
        rows.append(f"<tr><td><span style='color:{colour}'>■</span> {label}</td>{cells}</tr>")
    head = "".join(f"<th align='right'>{t}</th>" for t, _ in columns)
    return (
        f"<table cellspacing='2'><tr><th></th>{head}</tr>{''.join(rows)}</table>"
        f"<div style='color:{s.MUTED}'>n/a = no data (no model registered, or not measured)"
        + (f"<br>{html_text(note)}" if note else "")
        + "</div>"
    )  # the agent's words


class BucketBars(pg.PlotWidget):
    """Stacked bars, one per column (the peak phase, at OOM). Bars are made once."""

    SLOTS = 2

    def __init__(self, parent=None):
        super().__init__(parent, background=theme.current().PLOT_BACKGROUND)
        self.setMinimumWidth(150)
        self.setMaximumWidth(220)
        item = self.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.setMouseEnabled(x=False, y=False)
        item.showGrid(y=True, alpha=theme.GRID_ALPHA)
        item.getAxis("left").enableAutoSIPrefix(False)
        item.getAxis("left").setWidth(36)
        self.unit = "GiB"
        self.columns: list[tuple[str, dict]] = []
        self._bars = [
            [pg.BarGraphItem(x=[x], y0=[0], height=[0], width=0.6) for _ in BUCKETS]
            for x in range(self.SLOTS)
        ]
        for row in self._bars:
            for bar in row:
                item.addItem(bar)
        self.apply_theme(theme.current())
        theme.follow(self, self.apply_theme)

    def apply_theme(self, s: theme.Scheme) -> None:
        theme.colour_plot(self, s)
        for row in self._bars:
            for bar, colour in zip(row, s.BUCKET_COLOURS):
                bar.setOpts(brush=pg.mkBrush(colour), pen=pg.mkPen(s.PLOT_BACKGROUND))

    def set_columns(self, columns: list[tuple[str, dict]]) -> None:
        """columns: [(title, buckets dict)] drawn left to right (at most SLOTS)."""
        columns = columns[: self.SLOTS]
        self.columns = columns
        item = self.getPlotItem()
        largest = max((sum(v for v in b.values() if v) for _, b in columns), default=0)
        unit, name = (GiB, "GiB") if largest >= GiB else (MiB, "MiB")
        if name != self.unit:
            self.unit = name
        item.setLabel("left", name)
        top = 0.0
        for x, row in enumerate(self._bars):
            buckets = columns[x][1] if x < len(columns) else {}
            base = 0.0
            for (field, _label), bar in zip(BUCKETS, row):
                value = buckets.get(field)
                h = value / unit if value else 0.0
                bar.setOpts(x=[x], y0=[base], height=[h])
                bar.setVisible(h > 0)
                base += h
            top = max(top, base)
        item.getAxis("bottom").setTicks([[(i, t) for i, (t, _) in enumerate(columns)]])
        item.setXRange(-0.6, max(1, len(columns)) - 0.4, padding=0)
        item.setYRange(0, max(top * 1.08, 0.5), padding=0)
