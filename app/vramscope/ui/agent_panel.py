"""The agent panel: one section per process that runs the vramscope agent.

Per process: a header (pid, rank, host, step, connection), the allocator
settings in force, and per device

- a timeline of PyTorch *allocated* and *reserved* with the gap between
  them shaded (memory PyTorch holds in its cache: free for PyTorch, not for
  other processes), the peak since the previous sample dotted, a tick per
  training step along the bottom and a red line at every OOM; the phases of
  each step as markers (allocated at the end of forward, after backward,
  after the optimizer step) and a dashed line for "after loading", with a
  line of text that says which phase peaks;
- a stacked bar of the buckets now -- weights, gradients, optimizer state,
  activations + temporaries, cached free, outside PyTorch -- and, after an
  OOM, a second bar with the breakdown at that instant, plus the OOM in
  words (what was asked, what was free, the largest live blocks).

Series come from the store (``("agent", pid, start_time, device, metric)``,
written on the sampler thread by sources/agents.py); this widget only reads.
"""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame, QGridLayout, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget,
)

from vramscope.agent.protocol import Phase, phase_metric, series_key
from vramscope.core.samples import AGENT_ENDED, BUCKET_LABELS, AgentReport, Frame
from vramscope.core.units import GiB, MiB, fmt_bytes, fmt_duration
from vramscope.ui import theme

BUCKET_COLOURS = {"weights": "#0072B2", "gradients": "#56B4E9", "optimizer_state": "#009E73",
                  "other_allocated": "#E69F00", "cached_free": "#6f7785", "outside_pytorch": "#CC79A7"}
BUCKETS = tuple((field, label, BUCKET_COLOURS[field]) for field, label in BUCKET_LABELS.items())
ALLOCATED = "#f2f2f2"
RESERVED = "#56B4E9"
GAP_FILL = (86, 180, 233, 60)
OOM_RED = theme.CAPACITY
DEFAULT_WINDOW = 600.0  # seconds of history shown
MAX_STEP_TICKS = 2000
PHASES = (  # (phase, words, symbol, colour): the step phases the agent reads (agent/phases.py)
    (Phase.FORWARD, "end of forward (activations held)", "t1", "#E69F00"),
    (Phase.BACKWARD, "after backward", "d", "#56B4E9"),
    (Phase.OPTIMIZER, "after optimizer step", "s", "#009E73"),
)
LOADED_COLOUR = "#0072B2"


def _last(values) -> float | None:
    finite = values[np.isfinite(values)] if len(values) else values
    return float(finite[-1]) if len(finite) else None


def phase_text(latest: dict[str, float | None], loaded: float | None) -> str:
    """The last measured step's phases in words, and which one peaks."""
    known = {p: v for p, v in latest.items() if v is not None}
    if not known:
        return ""
    words = {p: w for p, w, _, _ in PHASES}
    parts = []
    if loaded is not None:
        parts.append(f"after loading {fmt_bytes(loaded)}")
    parts += [f"{words[p]} {fmt_bytes(known[p])}" for p, *_ in PHASES if p in known]
    top = max(known, key=lambda p: known[p])
    rest = [v for p, v in known.items() if p != top]
    peak = f"Largest phase: {words[top]}"
    if rest:
        peak += f", {fmt_bytes(known[top] - max(rest))} above the next"
    if top == "forward":
        peak += " -- activations dominate (checkpointing or a smaller micro-batch lowers it)"
    elif top == "optimizer":
        peak += " -- optimizer state dominates (8-bit optimizer or ZeRO sharding lowers it)"
    return "Phases of the last measured step: " + " · ".join(parts) + ". " + peak + "."


def _key(report: AgentReport, device: str, metric: str) -> tuple:
    return series_key(report.pid, report.start_time, device, metric)


def settings_text(settings: dict) -> str:
    if not settings:
        return "allocator settings: not reported"
    backend = settings.get("backend") or "n/a"
    exp = settings.get("expandable_segments")
    exp_txt = "n/a" if exp is None else ("on" if exp else "off")
    split = settings.get("max_split_size")
    split_txt = "unlimited" if split is None else fmt_bytes(split)
    return f"allocator: {backend} · expandable_segments: {exp_txt} · max_split_size: {split_txt}"


def oom_text(event) -> str:
    d = event.data
    when = time.strftime("%H:%M:%S", time.localtime(event.time))
    parts = [f"OOM at {when} on {d.get('device') or 'a CUDA device'}:"]
    asked = d.get("requested")
    parts.append(f"asked {fmt_bytes(asked)}" if asked is not None else "request size not reported")
    if d.get("device_free") is not None:
        parts.append(f"free {fmt_bytes(d.get('device_free'))} of {fmt_bytes(d.get('device_total'))}")
    b = d.get("buckets") or {}
    if b:
        held = ", ".join(f"{label} {fmt_bytes(b.get(field))}" for field, label, _ in BUCKETS
                         if b.get(field) is not None)
        parts.append("held then: " + held)
    blocks = d.get("largest_blocks") or []
    if blocks:
        parts.append("largest live blocks: " + ", ".join(fmt_bytes(x.get("size")) for x in blocks[:5]))
    if d.get("snapshot_path"):
        parts.append(f"memory_viz snapshot: {d['snapshot_path']}")
    return " · ".join(parts[:1]) + " " + "; ".join(parts[1:])


class BucketBars(pg.PlotWidget):
    """Stacked bars: 'now' and, after an OOM, 'at OOM'. Bytes shown in GiB."""

    def __init__(self, parent=None):
        super().__init__(parent, background=theme.PLOT_BACKGROUND)
        self.setMinimumWidth(200)
        self.setMaximumWidth(260)
        item = self.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.setMouseEnabled(x=False, y=False)
        item.showGrid(y=True, alpha=theme.GRID_ALPHA)
        item.setLabel("left", "GiB")
        item.getAxis("left").enableAutoSIPrefix(False)
        item.getAxis("left").setWidth(40)
        self.unit = "GiB"
        self._bars: list = []
        self.columns: list[tuple[str, dict]] = []

    def set_columns(self, columns: list[tuple[str, dict]]) -> None:
        """columns: [(title, buckets dict)] drawn left to right."""
        self.columns = columns
        item = self.getPlotItem()
        for bar in self._bars:
            item.removeItem(bar)
        self._bars = []
        largest = max((sum(v for v in b.values() if v) for _, b in columns), default=0)
        unit, name = (GiB, "GiB") if largest >= GiB else (MiB, "MiB")
        item.setLabel("left", name)
        self.unit = name
        top = 0.0
        for x, (_title, buckets) in enumerate(columns):
            base = 0.0
            for field, _label, colour in BUCKETS:
                value = buckets.get(field)
                if not value:
                    continue
                h = value / unit
                bar = pg.BarGraphItem(x=[x], y0=[base], height=[h], width=0.6,
                                      brush=pg.mkBrush(colour), pen=pg.mkPen(theme.PLOT_BACKGROUND))
                item.addItem(bar)
                self._bars.append(bar)
                base += h
            top = max(top, base)
        axis = item.getAxis("bottom")
        axis.setTicks([[(i, t) for i, (t, _) in enumerate(columns)]])
        item.setXRange(-0.6, max(1, len(columns)) - 0.4, padding=0)
        item.setYRange(0, max(top * 1.08, 0.5), padding=0)


class DeviceView(QWidget):
    """One device of one agent process: the timeline, the bars, the legend, the OOM text."""

    def __init__(self, device: str, parent=None):
        super().__init__(parent)
        self.device = device
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel(device)
        self.title.setStyleSheet("font-weight: 600;")
        layout.addWidget(self.title, 0, 0, 1, 3)
        self.plot = pg.PlotWidget(background=theme.PLOT_BACKGROUND,
                                  axisItems={"bottom": pg.DateAxisItem(orientation="bottom")})
        self.plot.setMinimumHeight(200)
        p = self.plot.getPlotItem()
        p.setMenuEnabled(False)
        p.hideButtons()
        p.setMouseEnabled(x=False, y=False)
        p.disableAutoRange()
        p.showGrid(x=True, y=True, alpha=theme.GRID_ALPHA)
        p.setLabel("left", "PyTorch memory (GiB)")
        p.getAxis("left").enableAutoSIPrefix(False)
        p.getAxis("left").setWidth(52)
        # bottom left, in columns: below allocated memory there is only the fixed
        # cost (weights, gradients, optimizer state), so the legend hides no curve
        self.legend = p.addLegend(offset=(8, -4), labelTextColor=theme.TEXT, labelTextSize="8pt",
                                  brush=pg.mkBrush(21, 24, 29, 210), colCount=3)
        self.reserved = p.plot(pen=pg.mkPen(RESERVED, width=2), name="reserved", connect="finite")
        self.allocated = p.plot(pen=pg.mkPen(ALLOCATED, width=2), name="allocated", connect="finite")
        self.peak = p.plot(pen=pg.mkPen(ALLOCATED, width=1, style=Qt.PenStyle.DotLine),
                           name="peak since previous sample", connect="finite")
        self.gap = pg.FillBetweenItem(self.allocated, self.reserved, brush=pg.mkBrush(*GAP_FILL))
        p.addItem(self.gap)
        self.gap.setZValue(-5)
        self.steps = pg.ScatterPlotItem(symbol="|", size=8, pen=pg.mkPen(theme.MUTED), brush=None)
        p.addItem(self.steps)
        self.phase_marks = {}
        for phase, words, symbol, colour in PHASES:
            mark = pg.ScatterPlotItem(symbol=symbol, size=7, pen=pg.mkPen(colour), brush=pg.mkBrush(colour),
                                      name=words)
            p.addItem(mark)
            self.phase_marks[phase] = mark
        self.loaded_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(LOADED_COLOUR, width=1, style=Qt.PenStyle.DashLine),
                                           label="after loading", labelOpts={"color": LOADED_COLOUR,
                                                                            "position": 0.12})
        self.loaded_line.setVisible(False)
        p.addItem(self.loaded_line)
        self.capacity = pg.InfiniteLine(angle=0, pen=pg.mkPen(theme.CAPACITY, width=1, style=Qt.PenStyle.DashLine))
        self.capacity.setVisible(False)
        p.addItem(self.capacity)
        self._oom_lines: list = []
        self._oom = None
        layout.addWidget(self.plot, 1, 0)
        self.bars = BucketBars()
        layout.addWidget(self.bars, 1, 1)
        self.bucket_legend = QLabel()
        self.bucket_legend.setTextFormat(Qt.TextFormat.RichText)
        self.bucket_legend.setMinimumWidth(250)
        self.bucket_legend.setAlignment(Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.bucket_legend, 1, 2)
        self.oom_label = QLabel()
        self.oom_label.setWordWrap(True)
        self.oom_label.setStyleSheet(f"color: {OOM_RED};")
        self.oom_label.setVisible(False)
        layout.addWidget(self.oom_label, 2, 0, 1, 3)
        self.phase_label = QLabel()
        self.phase_label.setWordWrap(True)
        self.phase_label.setVisible(False)
        layout.addWidget(self.phase_label, 3, 0, 1, 3)
        layout.setColumnStretch(0, 1)

    def update_view(self, store, report: AgentReport, dev, now: float, window: float) -> None:
        since = now - window
        p = self.plot.getPlotItem()
        has_timeline = dev.allocated is not None or dev.reserved is not None
        self.plot.setVisible(has_timeline)
        grid = self.layout()
        grid.setColumnStretch(0, 1 if has_timeline else 0)
        grid.setColumnStretch(2, 0 if has_timeline else 1)
        self.bars.setMinimumHeight(200 if has_timeline else 140)
        top = 0.0
        if has_timeline:
            ta, va = store.series(_key(report, dev.device, "allocated"), since)
            tr, vr = store.series(_key(report, dev.device, "reserved"), since)
            tp, vp = store.series(_key(report, dev.device, "peak_allocated"), since)
            n = min(len(ta), len(tr))
            if n and len(ta) == len(tr) and np.array_equal(ta, tr):
                self.allocated.setData(ta, va / GiB)
                self.reserved.setData(tr, vr / GiB)
            else:  # the fill needs both curves on one time base
                self.allocated.setData(ta[:n], va[:n] / GiB)
                self.reserved.setData(ta[:n], vr[:n] / GiB)
            self.peak.setData(tp, vp / GiB)
            for arr in (vr, vp, va):
                if len(arr) and np.isfinite(arr).any():
                    top = max(top, float(np.nanmax(arr)) / GiB)
            ts, _ = store.series(_key(report, "steps", "step"), since)
            ts = ts[-MAX_STEP_TICKS:]
            self.steps.setData(ts, np.zeros(len(ts)))
            latest = {}
            for phase, mark in self.phase_marks.items():
                tph, vph = store.series(_key(report, dev.device, phase_metric(phase)), since)
                tph, vph = tph[-MAX_STEP_TICKS:], vph[-MAX_STEP_TICKS:]
                mark.setData(tph, vph / GiB)
                latest[phase] = _last(vph)
                if len(vph) and np.isfinite(vph).any():
                    top = max(top, float(np.nanmax(vph)) / GiB)
            _, vl = store.series(_key(report, dev.device, "phase_loaded"), 0.0)
            loaded = _last(vl)
            self.loaded_line.setVisible(loaded is not None)
            if loaded is not None:
                self.loaded_line.setValue(loaded / GiB)
            text = phase_text(latest, loaded)
            self.phase_label.setText(text)
            self.phase_label.setVisible(bool(text))
            to, _ = store.series(_key(report, dev.device, "oom_requested"), since)
            for line in self._oom_lines:
                p.removeItem(line)
            self._oom_lines = []
            for t in to:
                line = pg.InfiniteLine(pos=float(t), angle=90, pen=pg.mkPen(OOM_RED, width=2),
                                       label="OOM", labelOpts={"color": OOM_RED, "position": 0.92})
                p.addItem(line)
                self._oom_lines.append(line)
            if dev.total:
                self.capacity.setValue(dev.total / GiB)
                self.capacity.setVisible(top > 0.6 * dev.total / GiB)
                if self.capacity.isVisible():
                    top = max(top, dev.total / GiB)
            p.setXRange(since, now, padding=0)
            p.setYRange(0, max(top * 1.1, 0.5), padding=0)
        # the bars and their legend
        now_b = dev.buckets.as_dict() if dev.buckets is not None else {}
        columns = [("now", now_b)]
        oom = self._last_oom(report, dev.device)
        if oom is not None and oom.data.get("buckets"):
            columns.append(("at OOM", dict(oom.data["buckets"])))
        self.bars.set_columns(columns)
        self.bucket_legend.setText(self._legend_html(columns))
        self.oom_label.setVisible(oom is not None)
        if oom is not None:
            self.oom_label.setText(oom_text(oom))
        stats = []
        for label, value in (("inactive split", dev.inactive_split),
                             ("alloc retries", dev.num_alloc_retries), ("OOMs", dev.num_ooms)):
            if value is not None:
                stats.append(f"{label} {fmt_bytes(value) if label == 'inactive split' else value}")
        head = dev.device
        if dev.allocated is not None:
            head += f" — allocated {fmt_bytes(dev.allocated)}, reserved {fmt_bytes(dev.reserved)}"
        if stats:
            head += " · " + " · ".join(stats)
        self.title.setText(head)

    def _last_oom(self, report: AgentReport, device: str):
        # recent_events survive frames the GUI timer skipped; events are remembered here too
        for e in tuple(report.recent_events) + tuple(report.events):
            if e.kind == "oom" and e.data.get("device") in (device, None):
                if self._oom is None or e.time >= self._oom.time:
                    self._oom = e
        return self._oom

    @staticmethod
    def _legend_html(columns) -> str:
        rows = []
        for field, label, colour in BUCKETS:
            cells = []
            for _title, b in columns:
                v = b.get(field)
                cells.append(f"<td align='right'>{fmt_bytes(v)}</td>")
            rows.append(f"<tr><td><span style='color:{colour}'>■</span> {label}</td>{''.join(cells)}</tr>")
        head = "".join(f"<th align='right'>{t}</th>" for t, _ in columns)
        return (f"<table cellspacing='3'><tr><th></th>{head}</tr>{''.join(rows)}</table>"
                f"<div style='color:{theme.MUTED}'>n/a = no data (no model registered, or not measured)</div>")


class AgentProcessView(QFrame):
    def __init__(self, report: AgentReport, parent=None):
        super().__init__(parent)
        self.identity = report.identity
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(f"AgentProcessView {{ border: 1px solid {theme.CARD_BORDER}; "
                           f"background: {theme.CARD_BACKGROUND}; }}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        self.header = QLabel()
        self.header.setStyleSheet("font-size: 11pt; font-weight: 600;")
        layout.addWidget(self.header)
        self.settings = QLabel()
        self.settings.setStyleSheet(f"color: {theme.MUTED};")
        layout.addWidget(self.settings)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setStyleSheet(f"color: {theme.WARNING};")
        self.notes.setVisible(False)
        layout.addWidget(self.notes)
        self.devices: dict[str, DeviceView] = {}
        self._layout = layout

    def update_view(self, store, report: AgentReport, now: float, window: float) -> None:
        bits = [f"PID {report.pid}"]
        if report.rank is not None:
            bits.append(f"rank {report.rank}/{report.world_size}" if report.world_size else f"rank {report.rank}")
        if report.hostname:
            bits.append(report.hostname)
        bits.append(f"step {report.step}" if report.step is not None else "no steps yet")
        if report.start_time:
            bits.append(f"running {fmt_duration(now - report.start_time)}")
        state = "connected" if report.connected else (report.error or "disconnected")
        self.header.setText(" · ".join(bits) + f"  [{state}]")
        self.settings.setText(settings_text(report.allocator_settings))
        notes = []
        if report.error and not report.connected and report.error != AGENT_ENDED:
            notes.append(report.error)  # e.g. a protocol version mismatch
        for dev in report.devices:
            if dev.buckets is not None and dev.buckets.note:
                notes.append(f"{dev.device}: {dev.buckets.note}")
        if report.dropped:
            notes.append("some history was lost before the monitor read it (the agent's ring was full)")
        for e in report.recent_events:
            if e.kind in ("eval_autograd", "checkpointing_use_cache") and e.data.get("text"):
                notes.append(f"{e.data.get('model', 'model')}: {e.data['text']}")
        notes = list(dict.fromkeys(notes))[-3:]
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))
        seen = set()
        for dev in report.devices:
            view = self.devices.get(dev.device)
            if view is None:
                view = self.devices[dev.device] = DeviceView(dev.device)
                self._layout.addWidget(view)
            view.update_view(store, report, dev, now, window)
            seen.add(dev.device)
        for name in [n for n in self.devices if n not in seen]:
            self.devices.pop(name).deleteLater()


class AgentPanel(QWidget):
    """All agent processes; ``update_from(frame)`` on the GUI timer (reads the store only)."""

    def __init__(self, store, window: float = DEFAULT_WINDOW, parent=None):
        super().__init__(parent)
        self.store = store
        self.window = window
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.empty = QLabel("No process runs the vramscope agent. Start one with "
                            "<code>vramscope run -- python train.py</code> or "
                            "<code>from vramscope import agent; agent.start(model, optimizer)</code>.")
        self.empty.setTextFormat(Qt.TextFormat.RichText)
        self.empty.setWordWrap(True)
        self.empty.setStyleSheet(f"color: {theme.MUTED}; padding: 12px;")
        outer.addWidget(self.empty)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        body = QWidget()
        self._list = QVBoxLayout(body)
        self._list.setContentsMargins(0, 0, 0, 0)
        self._list.addStretch(1)
        self.scroll.setWidget(body)
        outer.addWidget(self.scroll)
        self.views: dict = {}
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def update_from(self, frame: Frame | None) -> None:
        reports = list(frame.agents) if frame is not None else []
        now = frame.time if frame is not None else time.time()
        self.empty.setVisible(not reports)
        seen = set()
        for report in sorted(reports, key=lambda r: (r.rank if r.rank is not None else 1 << 30, r.pid)):
            ident = report.identity
            view = self.views.get(ident)
            if view is None:
                view = self.views[ident] = AgentProcessView(report)
                self._list.insertWidget(self._list.count() - 1, view)
            view.update_view(self.store, report, now, self.window)
            seen.add(ident)
        for ident in [i for i in self.views if i not in seen]:
            self.views.pop(ident).deleteLater()


