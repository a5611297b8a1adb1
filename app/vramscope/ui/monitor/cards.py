"""One card per GPU: name, used/total with a bar, driver-reserved, utilisation,
temperature and power where known, and an error state that is hard to miss.

Compact by default (one summary line under the bar), so a GPU row stays
short and the process table keeps its rows; "details" opens the full list.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.pci_address import short_bus_id
from vramscope.core.samples import NVIDIA, GpuSample
from vramscope.core.units import NA, fmt_gib, fmt_percent
from vramscope.ui.qt import theme
from vramscope.core.status.terminal_text import visible
from vramscope.ui.monitor.processes_pending import READING
from vramscope.ui.qt.safe_text import plain, tip

CARD_WIDTH = 250


def card_style(s: theme.Scheme) -> str:
    return f"""
QFrame#gpuCard {{ background: {s.CARD_BACKGROUND}; border: 1px solid {s.CARD_BORDER};
                 border-radius: 8px; }}
QFrame#gpuCard[state="error"] {{ border: 2px solid {s.ERROR}; }}
QFrame#gpuCard[state="asleep"] {{ border: 1px dashed {s.MUTED}; }}
QLabel#asleep {{ color: {s.MUTED}; font-weight: 600; }}
QLabel {{ background: transparent; }}
QLabel#title {{ font-weight: 600; font-size: 10pt; }}
QLabel#used {{ font-size: 14pt; font-weight: 600; }}
QLabel#error {{ color: #ffffff; background: {s.ERROR}; border-radius: 4px;
               padding: 3px 6px; font-weight: 600; }}
QLabel[class="key"] {{ color: {s.MUTED}; }}
QToolButton {{ border: none; color: {s.LINK}; padding: 0px 2px; }}
QProgressBar {{ border: none; background: {s.TRACK}; border-radius: 4px; height: 8px; }}
QProgressBar::chunk {{ border-radius: 4px; background: {s.OK}; }}
QProgressBar[level="high"]::chunk {{ background: {s.WARNING}; }}
QProgressBar[level="full"]::chunk {{ background: {s.ERROR}; }}
"""


class GpuCard(QFrame):
    details_toggled = Signal(bool)

    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.index = index
        self._shown: tuple | None = None  # what the card shows now (update_from)
        self.setObjectName("gpuCard")
        theme.styled(self, card_style)
        self.setFixedWidth(CARD_WIDTH)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 8)
        lay.setSpacing(4)

        self.heading = QLabel(f"GPU {index}")
        self.heading.setProperty("class", "key")
        self.details_button = QToolButton()
        self.details_button.setCheckable(True)
        self.details_button.setText("details ▸")
        self.details_button.setToolTip(
            "Show or hide free, driver-reserved, utilisation, temperature and power"
        )
        self.details_button.toggled.connect(self._details_clicked)
        self.title = plain(QLabel("name n/a"))  # a remote GPU's name and error are input
        self.title.setObjectName("title")
        self.error = plain(QLabel())
        self.error.setObjectName("error")
        self.error.hide()
        self.asleep = QLabel("Asleep (runtime-suspended): not queried until it wakes")
        self.asleep.setObjectName("asleep")
        self.asleep.setWordWrap(True)
        self.asleep.setToolTip(
            "The PCI device is runtime-suspended to save power; querying it "
            "would wake it, so vramscope leaves it alone until it wakes."
        )
        self.asleep.hide()
        self.mig = QLabel()  # MIG mode: the slices, each in its own row below
        self.mig.setProperty("class", "key")
        self.mig.setWordWrap(True)
        self.mig.hide()
        self.used = QLabel(NA)
        self.used.setObjectName("used")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        self.percent = QLabel()
        self.percent.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

        self.summary = QLabel()
        self.summary.setProperty("class", "key")
        self.percent.setProperty("class", "key")
        self.percent.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.details = QWidget()
        grid = QGridLayout(self.details)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(2)
        self.values: dict[str, QLabel] = {}
        rows = (
            ("free", "Free"),
            ("reserved", "Driver-reserved"),
            ("util", "Utilisation"),
            ("temperature", "Temperature"),
            ("power", "Power"),
            ("processes", "Processes"),
        )
        for row, (key, text) in enumerate(rows):
            k = QLabel(text)
            k.setProperty("class", "key")
            v = QLabel(NA)
            v.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(k, row, 0)
            grid.addWidget(v, row, 1)
            self.values[key] = v

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.heading, 1)
        top.addWidget(self.details_button)
        lay.addLayout(top)
        lay.addWidget(self.title)
        lay.addWidget(self.error)
        lay.addWidget(self.asleep)
        lay.addWidget(self.mig)
        lay.addWidget(self.used)
        lay.addWidget(self.bar)
        lay.addWidget(self.percent)
        lay.addWidget(self.summary)
        lay.addWidget(self.details)
        lay.addStretch(1)
        self.details.setVisible(False)

    def set_details(self, shown: bool) -> None:
        """Show the full list (free, reserved, utilisation, ...) or the one-line summary."""
        self.details_button.blockSignals(True)
        self.details_button.setChecked(shown)
        self.details_button.blockSignals(False)
        self._show_details(shown)

    def _details_clicked(self, shown: bool) -> None:
        self._show_details(shown)
        self.details_toggled.emit(shown)

    def _show_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.summary.setVisible(not shown)
        self.details_button.setText("details ▾" if shown else "details ▸")

    def update_from(self, gpu: GpuSample) -> None:
        shown = (_CARD_FIELDS(gpu), len(gpu.processes))
        if shown == self._shown:
            return  # the same figures as on screen (a quiet GPU, a steady remote box)
        self._shown = shown
        name = self.name_text = visible(gpu.name or "name n/a")  # a remote's name is input
        room = CARD_WIDTH - 30
        self.title.setText(self.title.fontMetrics().elidedText(name, Qt.TextElideMode.ElideRight, room))
        heading = (gpu.label, heading_vendor(gpu), short_bus_id(gpu.pci_bus_id))
        self._set_heading("  ·  ".join(x for x in heading if x))
        self.title.setToolTip(tip("\n".join(x for x in (name, gpu.vendor, gpu.uuid, gpu.pci_bus_id) if x)))
        self._set_error(gpu.error, gpu.asleep)
        self.used.setText(used_total_text(gpu))
        frac = None
        if gpu.used is not None and gpu.total:
            frac = gpu.used / gpu.total
        self.bar.setValue(0 if frac is None else int(round(min(1.0, frac) * 1000)))
        level = "ok" if frac is None or frac < 0.85 else ("high" if frac < 0.95 else "full")
        if self.bar.property("level") != level:
            self.bar.setProperty("level", level)
            self.bar.style().unpolish(self.bar)
            self.bar.style().polish(self.bar)
        self.percent.setText(
            (NA if frac is None else f"{frac * 100:.0f} % used") + f"  ·  free {fmt_gib(gpu.free)}"
        )
        self.percent.setToolTip(gpu.reason("total") or "")
        self.used.setToolTip(gpu.reason("used") or gpu.reason("total") or "")
        v = self.values
        v["free"].setText(fmt_gib(gpu.free))
        v["reserved"].setText(fmt_gib(gpu.reserved, 2))
        v["reserved"].setToolTip(
            "Memory the driver and system keep for themselves (NVML memory v2)."
            if gpu.reserved is not None
            else f"n/a: {gpu.reason('reserved') or 'this driver reports memory v1 only.'}"
        )
        v["util"].setText(fmt_percent(gpu.util_gpu))
        v["util"].setToolTip(f"n/a: {gpu.reason('util_gpu')}" if gpu.reason("util_gpu") else "")
        v["temperature"].setText(NA if gpu.temperature is None else f"{gpu.temperature} °C")
        v["temperature"].setToolTip(
            f"n/a: {gpu.reason('temperature')}"
            if gpu.temperature is None and gpu.reason("temperature")
            else ""
        )
        v["power"].setText(power_text(gpu))
        count = READING if gpu.processes_pending else str(len(gpu.processes))
        v["processes"].setText(count if gpu.error is None and not gpu.asleep else NA)
        self.summary.setText(summary_text(gpu))
        self.mig.setVisible(bool(gpu.mig_mode))
        if gpu.mig_mode:
            n = len(gpu.slices)
            self.mig.setText(
                f"MIG mode · {n} slice{'' if n == 1 else 's'}"
                + (": " + ", ".join(s.profile or "?" for s in gpu.slices) if n else "")
            )
            self.mig.setToolTip(
                "Multi-Instance GPU: each slice has its own memory, timeline and "
                "processes (rows below). NVML gives no per-process SM % on MIG."
            )
        elif gpu.unified:  # the same line says where a unified-memory board's memory is
            self.mig.setVisible(True)
            self.mig.setText("unified memory  ·  system RAM")
            self.mig.setToolTip(gpu.reason("total") or "")

    def show_slice(self, gpu: GpuSample, mig) -> None:
        """This card as one MIG slice of ``gpu``."""
        self.update_from(gpu.slice_view(mig))
        ids = f"GI {mig.gpu_instance_id} · CI {mig.compute_instance_id}"
        self._set_heading(f"{gpu.label}  ·  MIG slice")
        self.title.setText(f"{mig.profile or 'slice'}  ·  {ids}")
        self.title.setToolTip(tip("\n".join(x for x in (mig.name, mig.uuid, ids) if x)))
        self.summary.setText(slice_summary_text(mig))

    def _set_heading(self, text: str) -> None:
        """ "lab2 GPU 0  ·  00000000:01:00.0": what does not fit beside the details
        button ends in "…" (another machine's name makes it long); all of it in the tooltip."""
        room = CARD_WIDTH - 30 - self.details_button.sizeHint().width()
        text = visible(text)
        self.heading.setText(self.heading.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, room))
        self.heading.setToolTip(tip(text))

    def _set_error(self, error: str | None, asleep: bool = False) -> None:
        state = "error" if error else ("asleep" if asleep else "ok")
        self.asleep.setVisible(asleep and not error)
        self.error.setVisible(bool(error))
        self.error.setText(visible(error or ""))
        if self.property("state") != state:
            self.setProperty("state", state)
            self.style().unpolish(self)
            self.style().polish(self)
        for label in (self.used, self.percent, self.summary, *self.values.values()):
            label.setEnabled(not error and not asleep)
        self.bar.setEnabled(not error and not asleep)
        for widget in (self.used, self.bar, self.percent, self.summary):  # nothing to say asleep
            widget.setVisible(not asleep or bool(error))


# what a card shows of a GPU: every field but the processes, of which it shows the count
_CARD_FIELDS = attrgetter(*(f.name for f in dataclasses.fields(GpuSample) if f.name != "processes"))


def heading_vendor(gpu: GpuSample) -> str | None:
    """The vendor in a card's heading where the name may not say it (NVIDIA's names do)."""
    return gpu.vendor if gpu.vendor not in (None, NVIDIA) else None


def summary_text(gpu: GpuSample) -> str:
    """The compact card's line: utilisation, temperature (when known), processes."""
    parts = [f"util {fmt_percent(gpu.util_gpu)}"]
    if gpu.temperature is not None:
        parts.append(f"{gpu.temperature} °C")
    if gpu.error is None and not gpu.asleep and gpu.processes_pending:
        return "  ·  ".join(parts) + f"\nprocesses {READING}"  # (its own line: never cut)
    if gpu.error is None and not gpu.asleep:
        n = len(gpu.processes)
        parts.append(f"{n} process" + ("" if n == 1 else "es"))
    return "  ·  ".join(parts)


def slice_summary_text(mig) -> str:
    n = len(mig.processes)
    return f"{n} process{'' if n == 1 else 'es'}  ·  SM % n/a on MIG"


def used_total_text(gpu: GpuSample) -> str:
    """'18.2 / 24.0 GiB'; 'n/a / 24.0 GiB' when used is unknown."""
    used = NA if gpu.used is None else f"{gpu.used / (1 << 30):.1f}"
    total = NA if gpu.total is None else f"{gpu.total / (1 << 30):.1f}"
    return f"{used} / {total} GiB"


def power_text(gpu: GpuSample) -> str:
    if gpu.power_w is None:
        return NA
    if gpu.power_limit_w:
        return f"{gpu.power_w:.0f} / {gpu.power_limit_w:.0f} W"
    return f"{gpu.power_w:.0f} W"
