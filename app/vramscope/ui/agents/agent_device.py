"""One device of one agent process: where PyTorch's memory goes, over time.

- a stacked area of the buckets -- weights, gradients, optimizer state,
  activations + temporaries, cached free (reserved - allocated), outside
  PyTorch (context, NCCL, cuBLAS) -- with PyTorch's allocated and reserved
  as lines on it, the peak since the previous sample dotted, a tick per step
  along the bottom and a red line at every OOM;
- the phases of each step as markers (allocated at the end of forward, after
  backward, after the optimizer step) and a dashed line "after loading";
- once steps are too many to draw one by one (ten minutes of one-second
  steps, an hour of anything), each phase is a line through its peak per
  few pixels, the step ticks and the per-sample peak go, and the areas show
  the breakdown at each step's peak (the highest of its phase peaks; the end
  of forward, said so, where the agent reads no phase peaks) rather than
  wherever in a step each sample fell -- samples landing anywhere in a step
  draw a comb of spikes, or a flat line when the two rhythms lock;
- stacked bars (ui/agents/agent_breakdown.py): the breakdown at the real peak of the last measured step
  ("≥" where it is only a lower bound; "fwd end" where no phase peak is
  known -- never an end-of-phase reading called a peak) and, after an OOM,
  at the OOM.

Every plot item is created once and updated with new data.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from vramscope.core.agent_figures.agent_keys import (
    DEVICE_METRICS,
    PHASE_LOADED,
    phase_metric,
    phase_peak_metric,
)
from vramscope.core.agent_figures.device_fields import DEVICE_FIELDS
from vramscope.core.agent_figures.outside_story import story_from_store
from vramscope.ui.agents.agent_breakdown import BucketBars, legend_html, peak_column
from vramscope.ui.agents.agent_outside import OutsideMarks
from vramscope.core.samples import AgentReport
from vramscope.core.processes.stacking import cumulative, thin
from vramscope.core.units import GiB, fmt_bytes
from vramscope.ui.agents.oom_view import OomView
from vramscope.ui.agents.step_arrays import at_step_peaks, hold, peak_per_column, steps_between
from vramscope.ui.allocator.segment_map import SegmentMapView
from vramscope.ui.qt import theme
from vramscope.agent.protocol import EventKind, Phase
from vramscope.ui.agents.agent_texts import (
    BUCKETS,
    PHASES,
    agent_key,
    bucket_help,
    last_value,
    oom_text,
    phase_text,
)
from vramscope.ui.qt.safe_text import plain
from vramscope.ui.monitor.time_axis import TimeAxis
from vramscope.ui.timeline.gpu_timeline import MIN_SPAN
from vramscope.ui.timeline.timeline_stack import Band, shape_bands

MARK_PX = 3  # at most one phase marker (the peak) per this many pixels
DENSE_PX = 8  # fewer pixels per step than this: phases as lines, areas at each step's peak
ENVELOPE_NOTE = "areas: the breakdown at each step's peak (its highest phase peak)"
FORWARD_NOTE = "areas: the breakdown at the end of each step's forward (not its peak: no phase peaks read)"


class DeviceView(QWidget):
    """One device of one agent process: the timeline, the bars, the legend, the OOM text."""

    def __init__(self, device: str, parent=None):
        super().__init__(parent)
        self.device = device
        self.label = device  # 'cuda:0 (GPU 1)': set by the process's view, which has the frame
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel(device)
        self.title.setStyleSheet("font-weight: 600;")
        self.title.setToolTip(bucket_help())
        layout.addWidget(self.title, 0, 0, 1, 3)
        s = theme.current()
        self.plot = pg.PlotWidget(
            background=s.PLOT_BACKGROUND, axisItems={"bottom": TimeAxis(orientation="bottom")}
        )
        self.plot.setMinimumHeight(170)
        p = self.plot.getPlotItem()
        theme.fixed_plot(p, 40)
        self.bands = [Band(p) for _ in BUCKETS]
        self.reserved = p.plot(connect="finite")
        self.allocated = p.plot(connect="finite")
        self.peak = p.plot(connect="finite")
        for curve in (self.reserved, self.allocated, self.peak):
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
        self.steps = pg.ScatterPlotItem(symbol="|", size=8, brush=None)
        p.addItem(self.steps)
        self.phase_marks = {}
        for phase, _words, _symbol in PHASES:
            mark = pg.PlotDataItem(connect="finite")
            p.addItem(mark)
            self.phase_marks[phase] = mark
        self.loaded_line = pg.InfiniteLine(angle=0, label="after loading", labelOpts={"position": 0.12})
        self.loaded_line.setVisible(False)
        p.addItem(self.loaded_line)
        self.capacity = pg.InfiniteLine(angle=0)
        self.capacity.setVisible(False)
        p.addItem(self.capacity)
        self._oom_lines: dict[float, pg.InfiniteLine] = {}
        self.outside = OutsideMarks(p)  # the jumps of outside PyTorch, with their events
        self._oom = None
        layout.addWidget(self.plot, 1, 0)
        self.bars = BucketBars()
        layout.addWidget(self.bars, 1, 1)
        self.bucket_legend = QLabel()
        self.bucket_legend.setTextFormat(Qt.TextFormat.RichText)
        self.bucket_legend.setMinimumWidth(230)
        self.bucket_legend.setAlignment(Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.bucket_legend, 1, 2)
        self.oom_label = QLabel()
        theme.styled(self.oom_label, lambda s: f"color: {s.ERROR};")
        self.oom_label.setWordWrap(True)
        self.oom_label.setVisible(False)
        layout.addWidget(self.oom_label, 2, 0, 1, 3)
        self.oom_view = OomView()  # the post-mortem (ui/agents/oom_view.py): in the process's detail tabs
        self.session = self.oom_view.session  # (the agent panel's: the session this window records)
        self.phase_label = QLabel()
        self.phase_label.setWordWrap(True)
        self.phase_label.setVisible(False)
        layout.addWidget(self.phase_label, 3, 0, 1, 3)
        self.segment_map = SegmentMapView()  # the allocator's segments (ui/allocator/segment_map.py): ditto
        self.chart_height = 170  # set to the window's height by set_chart_height
        layout.setColumnStretch(0, 1)
        self._columns: list = []
        self._note: str | None = None  # under the legend: what the areas show, when not obvious
        self.area = (np.empty(0), np.zeros((len(BUCKETS), 0)))
        self.apply_theme(s)
        theme.follow(self, self.apply_theme)

    def apply_theme(self, s: theme.Scheme) -> None:
        theme.colour_plot(self.plot, s)
        for band, colour in zip(self.bands, s.BUCKET_COLOURS):
            band.set_style(colour, 0, 1.0, 170)
        faint = pg.mkColor(s.TOTAL_USED)
        faint.setAlpha(110)  # the stack's top already draws allocated; the line is its detail
        self.allocated.setPen(pg.mkPen(faint, width=1))
        self.reserved.setPen(pg.mkPen(s.LINK, width=1.2))
        self.peak.setPen(pg.mkPen(s.TOTAL_USED, width=1, style=Qt.PenStyle.DotLine))
        self.steps.setPen(pg.mkPen(s.MUTED))
        colours = phase_colours(s)
        for phase, mark in self.phase_marks.items():
            mark.setSymbolPen(pg.mkPen(s.PLOT_BACKGROUND, width=0.8))
            mark.setSymbolBrush(pg.mkBrush(colours[phase]))
            if mark.opts["symbol"] is None:  # drawn as a line (dense steps)
                mark.setPen(pg.mkPen(colours[phase], width=2))
        self._phase_colours = colours
        self.loaded_line.setPen(pg.mkPen(colours["loaded"], width=1, style=Qt.PenStyle.DashLine))
        self.loaded_line.label.setColor(colours["loaded"])
        self.capacity.setPen(pg.mkPen(s.CAPACITY, width=1, style=Qt.PenStyle.DashLine))
        for line in self._oom_lines.values():
            line.setPen(pg.mkPen(s.CAPACITY, width=2))
            line.label.setColor(s.CAPACITY)
        if self._columns:
            self.bucket_legend.setText(legend_html(self._columns, s, self._note))

    def update_view(self, store, report: AgentReport, dev, now: float, window: float) -> None:
        since = now - window
        p = self.plot.getPlotItem()
        s = theme.current()
        has_timeline = dev.allocated is not None or dev.reserved is not None
        self.plot.setVisible(has_timeline)
        grid = self.layout()
        grid.setColumnStretch(0, 1 if has_timeline else 0)
        grid.setColumnStretch(2, 0 if has_timeline else 1)
        self.bars.setMinimumHeight(min(170 if has_timeline else 120, self.chart_height))

        def series(metric, device=dev.device, start=since):
            return store.series(agent_key(report, device, metric), start)

        top = 0.0
        latest: dict[str, float | None] = {}
        when: dict[str, float] = {}
        peaks = None
        loaded = None
        self._note = None
        if has_timeline:
            px = max(100, int(self.plot.getPlotItem().vb.width()) or 600)
            ta, va = series("allocated")
            tr, vr = series("reserved")
            tp, vp = series("peak_allocated")
            ts, vs = series("step", device="steps")
            dense = steps_between(vs) > px // DENSE_PX
            tf, vf = series(phase_metric(Phase.FORWARD))
            step_peaks = self._step_peaks(series)  # (t, v) of each step's highest phase peak, or None
            envelope = dense and (step_peaks is not None or bool(np.isfinite(vf).any()))
            self.allocated.setData(ta, va / GiB)
            # dense samples land anywhere in a step: the zigzag hides the picture, and the
            # stack's top already draws allocated's envelope
            self.allocated.setVisible(len(ta) <= px // DENSE_PX)
            self.reserved.setData(tr, vr / GiB)
            if dense:  # the peak per few pixels; with phases, the end of forward says it
                tp, vp = peak_per_column(tp, vp, px // MARK_PX)
            self.peak.setData(tp, vp / GiB)
            self.peak.setVisible(not envelope)
            for arr in (vr, vp, va):
                if len(arr) and np.isfinite(arr).any():
                    top = max(top, float(np.nanmax(arr)) / GiB)
            at = (step_peaks or [(tf, vf)]) if envelope else None
            top = max(top, self._stack(series, ta, px // MARK_PX if dense else px, at) / GiB)
            self._note = (ENVELOPE_NOTE if step_peaks is not None else FORWARD_NOTE) if envelope else None
            if dense:  # a tick per few pixels is a grey bar: the header counts the steps
                ts = np.empty(0)
            ts, ys = peak_per_column(ts, np.zeros(len(ts)), px // MARK_PX)
            self.steps.setData(ts, ys)
            for phase, mark in self.phase_marks.items():
                tph, vph = series(phase_metric(phase))
                latest[phase] = last_value(vph)
                if latest[phase] is not None:
                    when[phase] = float(tph[np.isfinite(vph)][-1])
                tph, vph = peak_per_column(tph, vph, px // MARK_PX)
                self._mark(mark, phase, tph, vph / GiB, dense)
                if len(vph) and np.isfinite(vph).any():
                    top = max(top, float(np.nanmax(vph)) / GiB)
            _, vl = series(PHASE_LOADED, start=0.0)
            loaded = last_value(vl)
            self.loaded_line.setVisible(loaded is not None)
            if loaded is not None:
                self.loaded_line.setValue(loaded / GiB)
            peaks = self._last_peaks(series, when)
            text = phase_text(latest, loaded, peaks, report.phases_measured)
            outside = story_from_store(store, report.pid, report.start_time, dev.device)
            self.outside.show(outside, s)
            text = "\n".join(x for x in (text, outside.text()) if x)
            self.phase_label.setText(text)
            self.phase_label.setVisible(bool(text))
            to, _ = series("oom_requested")
            for t in to:
                if float(t) not in self._oom_lines:
                    line = pg.InfiniteLine(
                        pos=float(t),
                        angle=90,
                        pen=pg.mkPen(s.CAPACITY, width=2),
                        label="OOM",
                        labelOpts={"color": s.CAPACITY, "position": 0.92},
                    )
                    p.addItem(line)
                    self._oom_lines[float(t)] = line
            if dev.total:
                self.capacity.setValue(dev.total / GiB)
                self.capacity.setVisible(top > 0.6 * dev.total / GiB)
                if self.capacity.isVisible():
                    top = max(top, dev.total / GiB)
            # the axis starts at the run's first data (at least MIN_SPAN), then scrolls
            first = float(ta[0]) if len(ta) else now
            p.setXRange(max(since, min(first, now - MIN_SPAN)), now, padding=0)
            p.setYRange(0, max(top * 1.1, 0.5), padding=0)
        columns = [peak_column(series, dev, latest, when, peaks if has_timeline else None)]
        oom = self._last_oom(report, dev.device)
        if oom is not None and oom.data.get("buckets"):
            columns.append(("at OOM", dict(oom.data["buckets"])))
        self._columns = columns
        self.bars.set_columns(columns)
        self.bucket_legend.setText(legend_html(columns, s, self._note))
        self.oom_label.setVisible(oom is not None)
        if oom is not None:
            self.oom_label.setText(oom_text(oom))
        plain(self.title, device_title(dev, self.label))  # (an agent's report is input)
        self.segment_map.update_view(report, dev.device)
        self.oom_view.session = self.session
        self.oom_view.show_event(oom, report.modules, dev.device)

    def set_chart_height(self, height: int) -> None:
        """The charts at most ``height`` pixels high (ui/agents/agent_details.py's chart_height)."""
        self.chart_height = height
        for chart in (self.plot, self.bars):
            chart.setMinimumHeight(min(chart.minimumHeight(), height))
            chart.setMaximumHeight(height)

    def _mark(self, mark, phase: str, t, v, dense: bool) -> None:
        """Symbols while there is room for them; a line (the peak per few pixels) once
        steps are too many to tell apart -- legible over ten minutes or an hour."""
        symbol = dict((p, sym) for p, _w, sym in PHASES)[phase]
        colour = self._phase_colours[phase]
        if dense:
            mark.setData(t, v, symbol=None, pen=pg.mkPen(colour, width=2))
        else:
            mark.setData(t, v, symbol=symbol, symbolSize=7, pen=None)

    def _stack(self, series, base: np.ndarray, columns: int, forward=None) -> float:
        """The bucket areas on the allocated series' times, at most ``columns`` points
        (the peak of each); with ``forward`` ([(t, v)]: each phase's peaks, else the
        end-of-forward readings) as at the highest of them. Returns the top (bytes)."""
        layers = {field: hold(base, *series(field)) for field, _label in BUCKETS}
        if forward is not None:
            layers = at_step_peaks(layers, np.maximum.reduce([hold(base, t, v) for t, v in forward]))
        tops = cumulative([layers[field] for field, _label in BUCKETS])
        if not tops.size:
            for band in self.bands:
                band.set_visible(False)
            return 0.0
        t, tops = thin(base, tops, columns)
        self.area = (t, tops)  # what the areas draw: times, cumulative tops (bytes) per bucket
        shape_bands(self.bands, t, tops)
        for band in self.bands:
            band.set_visible(True)
        return float(tops[-1].max()) if tops.shape[1] else 0.0

    def _step_peaks(self, series):
        """Each phase's peak per step [(t, v)] (lower bounds where not exact): their
        highest at any time is the newest step's real peak; None when the agent reads
        no phase peaks."""
        out = [series(phase_peak_metric(phase)) for phase, _w, _s in PHASES]
        return [(t, v) for t, v in out if len(t)] or None

    def _last_peaks(self, series, when: dict) -> dict | None:
        """The last measured step's phase peaks: phase -> (peak, upper bound or None:
        exact); only those read with its end readings (same times)."""
        out = {}
        for phase, t_end in when.items():
            t, v = series(phase_peak_metric(phase), start=t_end - 1.0)
            if not len(t) or float(t[-1]) != t_end or not np.isfinite(v[-1]):
                continue
            tb, vb = series(phase_peak_metric(phase, True), start=t_end - 1.0)
            bounded = len(tb) and float(tb[-1]) == t_end and np.isfinite(vb[-1])
            out[phase] = (float(v[-1]), float(vb[-1]) if bounded else None)
        return out or None

    def _last_oom(self, report: AgentReport, device: str):
        # recent_events survive frames the GUI timer skipped; events are remembered here too
        for e in tuple(report.recent_events) + tuple(report.events):
            if e.kind == EventKind.OOM and e.data.get("device") in (device, None):
                if self._oom is None or e.time >= self._oom.time:
                    self._oom = e
        return self._oom


def phase_colours(s: theme.Scheme) -> dict[str, str]:
    """Each phase in the colour of the bucket it adds: forward the activations,
    backward the gradients, the optimizer step its state, loading the weights."""
    w, g, o, a = s.BUCKET_COLOURS[:4]
    return {Phase.FORWARD: a, Phase.BACKWARD: g, Phase.OPTIMIZER: o, Phase.EVAL: s.LINK, "loaded": w}


def device_title(dev, name: str | None = None) -> str:
    """``name``: the device as the monitor names it ('cuda:0 (GPU 1)')."""
    # the reported figures the device's plot does not draw (core/agent_figures/device_fields.py)
    stats = [
        f"{f.label} {f.text(value)}"
        for f in DEVICE_FIELDS
        if f.key not in DEVICE_METRICS and (value := f.value(dev)) is not None
    ]
    head = name or dev.device
    if dev.runtime and not dev.runtime.startswith("CUDA"):
        head += f" ({dev.runtime})"  # ROCm / XPU: torch.cuda is HIP there, xpu its own
    if dev.allocated is not None:
        head += f" — allocated {fmt_bytes(dev.allocated)}, reserved {fmt_bytes(dev.reserved)}"
    if stats:
        head += " · " + " · ".join(stats)
    if dev.missing:
        head += " · n/a on this backend: " + ", ".join(dev.missing)
    return head
