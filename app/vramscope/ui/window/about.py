"""Help → About: what this is, and every version a bug report needs.

    AboutDialog(window.store.latest, parent=window).open()

``about_rows(frame)`` gives the rows as text (Qt-free values; "not available"
where the driver did not say, never a guess), so they can be copied into a
bug report with the dialog's "Copy" button.
"""

from __future__ import annotations

import platform

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout

from vramscope import __version__
from vramscope.ui.qt import theme

NOT_AVAILABLE = "not available"
NO_SAMPLE = "no sample yet"
SUMMARY = (
    "A desktop VRAM monitor: what fills your GPU, per process, live — with a "
    "PyTorch agent, diagnostics, recorded sessions and a fit planner."
)


def _module_version(name: str) -> str:
    try:
        module = __import__(name)
    except Exception:  # an optional module missing or broken: say so, don't fail About
        return NOT_AVAILABLE
    return str(getattr(module, "__version__", NOT_AVAILABLE))


def _driver_value(frame, field: str) -> str:
    if frame is None:
        return NO_SAMPLE
    value = getattr(frame, field, None)
    return NOT_AVAILABLE if value is None else str(value)


def about_rows(frame=None) -> list[tuple[str, str]]:
    """(label, value) rows: app, driver side from ``frame``, then the libraries."""
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import qVersion

    simulated = bool(frame is not None and frame.simulated)
    suffix = " (demo: simulated)" if simulated else ""
    rows = [
        ("vramscope", __version__),
        ("NVIDIA driver", _driver_value(frame, "driver_version") + suffix),
        ("NVML", _driver_value(frame, "nvml_version") + suffix),
        ("CUDA driver API", _driver_value(frame, "cuda_driver_version") + suffix),
        ("Qt", qVersion()),
        ("PySide6", pyside_version),
        ("pyqtgraph", _module_version("pyqtgraph")),
        ("Python", f"{platform.python_version()} ({platform.python_implementation()})"),
    ]
    return rows


def about_text(frame=None) -> str:
    return "\n".join(f"{label}: {value}" for label, value in about_rows(frame))


class AboutDialog(QDialog):
    def __init__(self, frame=None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("About vramscope")
        self.setObjectName("aboutDialog")
        layout = QVBoxLayout(self)
        title = QLabel(f"vramscope {__version__}")
        title.setStyleSheet("font-size: 16pt; font-weight: 600;")
        layout.addWidget(title)
        summary = QLabel(SUMMARY)
        summary.setWordWrap(True)
        theme.styled(summary, lambda s: f"color: {s.MUTED};")
        layout.addWidget(summary)
        form = QFormLayout()
        self.values: dict[str, QLabel] = {}
        self.rows = about_rows(frame)
        for label, value in self.rows:
            v = QLabel(value)
            v.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.values[label] = v
            form.addRow(label, v)
        layout.addLayout(form)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = buttons.addButton("Copy versions", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.setToolTip("Copy these lines for a bug report")
        self.copy_button.clicked.connect(self.copy)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.setMinimumWidth(440)

    def text(self) -> str:
        return "\n".join(f"{label}: {value}" for label, value in self.rows)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())
