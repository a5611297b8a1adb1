"""The fleet overview (--from-prometheus): one row per host with its GPUs'
used/total and its alerts; choosing a host shows its memory history, read
from Prometheus with range queries on a worker thread."""

from __future__ import annotations

import time

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.units import fmt_gib
from vramscope.ui.qt import theme
from vramscope.ui.qt.safe_text import plain
from vramscope.ui.monitor.time_axis import TimeAxis
from vramscope.core.samples import HostStatus

COLUMNS = ("Host", "State", "GPUs", "Used / total", "Per GPU (used / total GiB)", "Alerts")
RANGES = (
    ("Last hour", 3600.0),
    ("Last 6 hours", 6 * 3600.0),
    ("Last day", 86400.0),
    ("Last 10 minutes", 600.0),
)
GiB = float(1 << 30)


def host_rows(frame, alerts=()) -> list[tuple]:
    """(host, state text, GPU count, used/total text, per-GPU text, alert count) per host."""
    host_of_gpu = {g.index: g.host for g in frame.gpus}
    counts: dict = {}
    for a in alerts:
        host = host_of_gpu.get(a.gpu)
        if host is not None:
            counts[host] = counts.get(host, 0) + 1
    rows = []
    for state in frame.hosts:
        gpus = [g for g in frame.gpus if g.host == state.host]
        used = [g.used for g in gpus if g.used is not None]
        total = [g.total for g in gpus if g.total is not None]
        summary = f"{fmt_gib(sum(used))} / {fmt_gib(sum(total))}" if used and total else "n/a"
        per_gpu = "   ".join(
            f"{g.host_index}: {'n/a' if g.used is None else f'{g.used / GiB:.1f}'}"
            f" / {'n/a' if g.total is None else f'{g.total / GiB:.0f}'}"
            for g in gpus
        )
        rows.append(
            (
                state.host,
                "up" if state.state == HostStatus.CONNECTED else (state.error or state.state),
                len(gpus),
                summary,
                per_gpu,
                counts.get(state.host, 0),
            )
        )
    return rows


class FleetOverview(QWidget):
    host_chosen = Signal(str)

    def __init__(self, source, bridge=None, engine=None, parent=None):
        super().__init__(parent)
        self.source, self.bridge, self.engine = source, bridge, engine
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.cellClicked.connect(lambda row, _col: self.choose(self.table.item(row, 0).text()))

        self.title = QLabel("Choose a host to see its memory history (from Prometheus)")
        self.title.setStyleSheet("font-weight: 600;")
        self.range = QComboBox()
        for text, _seconds in RANGES:
            self.range.addItem(text)
        self.range.currentIndexChanged.connect(lambda _i: self.chosen and self.choose(self.chosen))
        head = QHBoxLayout()
        head.addWidget(self.title, 1)
        head.addWidget(self.range)
        self.plot = pg.PlotWidget(axisItems={"bottom": TimeAxis(orientation="bottom")})
        self.plot.setLabel("left", "device memory (GiB)")
        self.plot.addLegend(offset=(10, 10))
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        history = QWidget()
        hl = QVBoxLayout(history)
        hl.setContentsMargins(0, 6, 0, 0)
        hl.addLayout(head)
        hl.addWidget(self.plot, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(history)
        split.setSizes([260, 420])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)
        self.chosen: str | None = None
        self.history: dict | None = None
        self._span = (time.time() - RANGES[0][1], time.time())
        theme.follow(self, self.apply_theme)

    def apply_theme(self, s: theme.Scheme) -> None:
        """The plot's background, axes and legend, and the hosts' states (a live switch)."""
        theme.colour_plot(self.plot, s)
        legend = self.plot.getPlotItem().legend
        if legend is not None:
            theme.colour_legend(legend, s.PLOT_FOREGROUND)
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 1)
            if item is not None:
                item.setForeground(pg.mkColor(_state_colour(item.data(Qt.ItemDataRole.UserRole), s)))

    def update_from(self, frame) -> None:
        if not self.isVisible() and self.table.rowCount():
            return  # a hidden tab does no work
        alerts = self.engine.alerts() if self.engine is not None else ()
        rows = host_rows(frame, alerts)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                item = self.table.item(r, c)
                if item is None:
                    item = QTableWidgetItem()
                    self.table.setItem(r, c, item)
                item.setText(str(value))
                if c == 1:
                    up = frame.hosts[r].state == HostStatus.CONNECTED  # the rows follow frame.hosts
                    item.setData(Qt.ItemDataRole.UserRole, up)
                    item.setForeground(pg.mkColor(_state_colour(up, theme.current())))

    def choose(self, host: str) -> None:
        """Show ``host``'s history over the chosen range (range queries, off the GUI thread)."""
        self.chosen = host
        seconds = RANGES[max(0, self.range.currentIndex())][1]
        self.title.setText(
            f"{host}: memory, {RANGES[max(0, self.range.currentIndex())][0].lower()} (loading…)"
        )
        end = time.time()

        self._span = (end - seconds, end)

        def work():
            return self.source.history(host, end - seconds, end)

        if self.bridge is None:
            try:
                self.show_history(host, work(), None)
            except Exception as exc:  # noqa: BLE001 - shown, not raised
                self.show_history(host, None, exc)
        else:
            self.bridge.run_in_thread(
                work,
                lambda result, error: self.show_history(host, result, error),
                name="vramscope-fleet-history",
            )
        self.host_chosen.emit(host)

    def show_history(self, host: str, history, error) -> None:
        if host != self.chosen:
            return
        self.plot.clear()
        if error is not None:
            plain(self.title, f"{host}: history not available: {error}")  # a host's answer is input
            return
        self.history = history
        label = RANGES[max(0, self.range.currentIndex())][0].lower()
        plain(self.title, f"{host}: memory, {label}")
        for n, (gpu, series) in enumerate(sorted(history.items())):
            colour = pg.intColor(n, hues=max(3, len(history)))
            t = series.get("t") or []
            for key, style in (("used", Qt.PenStyle.SolidLine), ("total", Qt.PenStyle.DashLine)):
                values = series.get(key)
                if not values:
                    continue
                ys = [float("nan") if v is None else v / GiB for v in values]
                few = len(ys) < 5  # a host scraped only recently: dots, not an invisible line
                self.plot.plot(
                    t[: len(ys)],
                    ys,
                    pen=pg.mkPen(colour, width=2, style=style),
                    name=f"GPU {gpu} {key}",
                    connect="finite",
                    symbol="o" if few else None,
                    symbolSize=6,
                    symbolBrush=colour if few else None,
                )
        self.plot.setXRange(*self._span, padding=0.01)


def _state_colour(up: bool, s: theme.Scheme) -> str:
    return s.OK if up else s.ERROR


def attach_fleet_view(window, source, engine=None) -> FleetOverview:
    """A "Fleet" tab beside the monitor, following every frame."""
    view = FleetOverview(source, getattr(window, "bridge", None), engine)
    window.add_panel("Fleet", view)
    window.new_frame.connect(view.update_from)
    window.fleet_view = view
    return view
