"""One card per GPU: name, used/total with a bar, driver-reserved, utilisation,
temperature and power where known, and an error state that is hard to miss."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QProgressBar, QVBoxLayout

from vramscope.core.samples import GpuSample
from vramscope.core.units import NA, fmt_gib, fmt_percent
from vramscope.ui import theme

CARD_WIDTH = 290

_CARD_STYLE = f"""
QFrame#gpuCard {{ background: {theme.CARD_BACKGROUND}; border: 1px solid {theme.CARD_BORDER};
                 border-radius: 8px; }}
QFrame#gpuCard[state="error"] {{ border: 2px solid {theme.ERROR}; }}
QFrame#gpuCard[state="asleep"] {{ border: 1px dashed {theme.MUTED}; }}
QLabel#asleep {{ color: {theme.MUTED}; font-weight: 600; }}
QLabel {{ background: transparent; }}
QLabel#title {{ font-weight: 600; font-size: 10.5pt; }}
QLabel#used {{ font-size: 17pt; font-weight: 600; }}
QLabel#error {{ color: #ffffff; background: {theme.ERROR}; border-radius: 4px;
               padding: 3px 6px; font-weight: 600; }}
QLabel[class="key"] {{ color: {theme.MUTED}; }}
QProgressBar {{ border: none; background: {theme.TRACK}; border-radius: 4px; height: 8px; }}
QProgressBar::chunk {{ border-radius: 4px; background: {theme.OK}; }}
QProgressBar[level="high"]::chunk {{ background: {theme.WARNING}; }}
QProgressBar[level="full"]::chunk {{ background: {theme.ERROR}; }}
"""


class GpuCard(QFrame):
    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.index = index
        self.setObjectName("gpuCard")
        self.setStyleSheet(_CARD_STYLE)
        self.setFixedWidth(CARD_WIDTH)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(14, 12, 14, 12)
        lay.setSpacing(6)

        self.heading = QLabel(f"GPU {index}")
        self.heading.setProperty("class", "key")
        self.title = QLabel("name n/a")
        self.title.setObjectName("title")
        self.error = QLabel()
        self.error.setObjectName("error")
        self.error.hide()
        self.asleep = QLabel("Asleep (runtime-suspended): not queried until it wakes")
        self.asleep.setObjectName("asleep")
        self.asleep.setWordWrap(True)
        self.asleep.setToolTip("The PCI device is runtime-suspended to save power; querying it "
                               "would wake it, so vramscope leaves it alone until it wakes.")
        self.asleep.hide()
        self.used = QLabel(NA)
        self.used.setObjectName("used")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        self.percent = QLabel()
        self.percent.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(3)
        self.values: dict[str, QLabel] = {}
        rows = (("free", "Free"), ("reserved", "Driver-reserved"), ("util", "Utilisation"),
                ("temperature", "Temperature"), ("power", "Power"), ("processes", "Processes"))
        for row, (key, text) in enumerate(rows):
            k = QLabel(text)
            k.setProperty("class", "key")
            v = QLabel(NA)
            v.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(k, row, 0)
            grid.addWidget(v, row, 1)
            self.values[key] = v

        lay.addWidget(self.heading)
        lay.addWidget(self.title)
        lay.addWidget(self.error)
        lay.addWidget(self.asleep)
        lay.addWidget(self.used)
        lay.addWidget(self.bar)
        lay.addWidget(self.percent)
        lay.addLayout(grid)
        lay.addStretch(1)

    def update_from(self, gpu: GpuSample) -> None:
        name = self.name_text = gpu.name or "name n/a"
        room = CARD_WIDTH - 30
        self.title.setText(self.title.fontMetrics().elidedText(name, Qt.TextElideMode.ElideRight, room))
        self.heading.setText(gpu.label + (f"  ·  {gpu.pci_bus_id}" if gpu.pci_bus_id else ""))
        self.title.setToolTip("\n".join(x for x in (name, gpu.uuid, gpu.pci_bus_id) if x))
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
        self.percent.setText(NA if frac is None else f"{frac * 100:.0f} % used")
        v = self.values
        v["free"].setText(fmt_gib(gpu.free))
        v["reserved"].setText(fmt_gib(gpu.reserved, 2))
        v["reserved"].setToolTip(
            "Memory the driver and system keep for themselves (NVML memory v2)."
            if gpu.reserved is not None else "n/a: this driver reports memory v1 only.")
        v["util"].setText(fmt_percent(gpu.util_gpu))
        v["temperature"].setText(NA if gpu.temperature is None else f"{gpu.temperature} °C")
        v["power"].setText(power_text(gpu))
        v["processes"].setText(str(len(gpu.processes)) if gpu.error is None and not gpu.asleep
                               else NA)

    def _set_error(self, error: str | None, asleep: bool = False) -> None:
        state = "error" if error else ("asleep" if asleep else "ok")
        self.asleep.setVisible(asleep and not error)
        self.error.setVisible(bool(error))
        self.error.setText(error or "")
        if self.property("state") != state:
            self.setProperty("state", state)
            self.style().unpolish(self)
            self.style().polish(self)
        for label in (self.used, self.percent, *self.values.values()):
            label.setEnabled(not error and not asleep)
        self.bar.setEnabled(not error and not asleep)
        for widget in (self.used, self.bar, self.percent):  # nothing to say while it sleeps
            widget.setVisible(not asleep or bool(error))


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
