"""Planned vs measured: the plan's buckets beside what the PyTorch agent
measured in the attached process, the peak it has seen, and why each row
differs (core/planner/compare.py says it; this only shows it)."""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from vramscope.core.planner.compare import compare, measured_devices
from vramscope.core.planner.report import signed_size, size
from vramscope.core.units import NA
from vramscope.ui.qt import theme
from vramscope.ui.planner.planner_widgets import Fold, FullTable, item


def exact(n: int) -> str:
    """Bytes to the byte, GiB beside: planned vs measured is compared exactly."""
    return f"{n:,} B  ({size(n)})"


def _sized(n: int, align_right: bool = True):
    """GiB in the cell (the table fits at 1024 px), the exact bytes in its tooltip."""
    return item(size(n), align_right, tip=exact(n))


class MeasuredView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.report = None
        self.plan = None
        self.like_with_like = False
        self._peaks: dict[tuple, int] = {}  # (pid, start, device) -> peak allocated seen
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        title = QHBoxLayout()
        self.label = QLabel("Planned vs measured: no agent attached")
        self.label.setWordWrap(True)
        self.device = QComboBox()
        self.device.hide()
        self.device.currentIndexChanged.connect(self.fill)
        title.addWidget(self.label, 1)
        title.addWidget(self.device)
        col.addLayout(title)
        self.table = FullTable(["Bucket", "Planned", "Measured", "Measured - planned"])
        self.why = Fold("Why they differ")
        col.addWidget(self.table)
        col.addWidget(self.why)
        theme.follow(self, self.fill)  # the differences' colours

    def set_report(self, report) -> None:
        self.report = report
        devices = measured_devices(report) if report is not None else ()
        for d in getattr(report, "devices", ()) or ():
            seen = [v for v in (d.peak_allocated, d.allocated) if v is not None]
            if seen:
                key = (report.pid, report.start_time, d.device)
                self._peaks[key] = max([self._peaks.get(key, 0), *seen])
        self.device.blockSignals(True)
        current = self.device.currentText()
        self.device.clear()
        self.device.addItems(list(devices))
        if current in devices:
            self.device.setCurrentText(current)
        self.device.blockSignals(False)
        self.device.setVisible(len(devices) > 1)
        self.fill()

    def set_plan(self, plan, like_with_like: bool) -> None:
        self.plan, self.like_with_like = plan, like_with_like
        self.fill()

    def fill(self, *_):
        self._fill()
        self.table.setVisible(self.table.rowCount() > 0)
        if self.table.rowCount() == 0:
            self.why.set_lines([])

    def _fill(self) -> None:
        report, device = self.report, self.device.currentText() or None
        if report is None or device is None:
            self.label.setText(
                "Planned vs measured: no agent attached"
                if report is None
                else "Planned vs measured: the agent has no buckets yet"
            )
            self.table.setRowCount(0)
            self.table.fit()
            return
        step = f", step {report.step}" if report.step is not None else ""
        if not self.like_with_like or self.plan is None:
            self.label.setText(
                f"Planned vs measured: pid {report.pid} is attached, but this plan "
                "is not of its model -- choose 'Attached process (agent)' as the "
                "source to compare like with like"
            )
            self.table.setRowCount(0)
            self.table.fit()
            return
        same = (
            " -- planned from this process's own model, like with like"
            if self.plan.request.dtype_bytes is not None
            else ""
        )
        self.label.setText(f"Planned vs measured: pid {report.pid} on {device}{step}{same}")
        peak = self._peaks.get((report.pid, report.start_time, device))
        rows = compare(self.plan, report, device, peak=peak)
        t = self.table
        t.setRowCount(len(rows))
        scheme = theme.current()
        for r, row in enumerate(rows):
            diff = row.difference
            t.setItem(r, 0, item(row.label, tip=row.why))
            t.setItem(r, 1, item("not planned", True) if row.planned is None else _sized(row.planned))
            t.setItem(r, 2, item("no data", True) if row.measured is None else _sized(row.measured))
            d = item(
                NA if diff is None else ("exact" if diff == 0 else signed_size(diff)),
                True,
                tip=None if not diff else f"{diff:+,} B",
            )
            if diff is not None:
                d.setForeground(QColor(scheme.OK if diff == 0 else scheme.WARNING))
            t.setItem(r, 3, d)
        self.why.set_lines([f"{row.label}: {row.why}" for row in rows if row.why])
        t.fit()
