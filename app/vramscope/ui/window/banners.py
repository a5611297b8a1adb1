"""Messages that must not be missed: simulated data, no driver."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

from vramscope.ui.qt import theme
from vramscope.ui.qt.safe_text import plain

DEMO_TEXT = "Simulated data — demo mode. Nothing here comes from a real GPU."


class DemoBanner(QLabel):
    def __init__(self, parent=None):
        super().__init__(DEMO_TEXT, parent)
        self.setObjectName("demoBanner")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        theme.styled(
            self,
            lambda s: (
                f"QLabel#demoBanner {{ background: {s.DEMO_BANNER}; color: #fff3cc;"
                " font-weight: 600; padding: 5px; border-radius: 4px; }"
            ),
        )


class NoDriverPage(QWidget):
    """Shown instead of the monitor when the source reports a frame-level error."""

    demo_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.title = QLabel("No NVIDIA driver found")
        self.title.setStyleSheet("font-size: 18pt; font-weight: 600;")
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.detail = plain(QLabel())  # the error is input (a remote host's, a library's)
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        theme.styled(self.detail, lambda s: f"color: {s.MUTED};")
        self.hint = QLabel(
            "vramscope reads GPU memory through the NVIDIA driver's NVML library\n"
            "(libnvidia-ml.so.1). Once a driver is available it is picked up without a restart.\n"
            "Until then you can look around with a simulated workstation."
        )
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.demo_button = QPushButton("Show the demo")
        self.demo_button.setMinimumWidth(180)
        self.demo_button.setStyleSheet("QPushButton { padding: 8px 18px; font-weight: 600; }")
        self.demo_button.clicked.connect(self.demo_requested)

        box = QWidget()
        box.setFixedWidth(620)
        inner = QVBoxLayout(box)
        inner.setSpacing(10)
        for w in (self.title, self.detail, self.hint):
            inner.addWidget(w)
        inner.addSpacing(12)
        inner.addWidget(self.demo_button, 0, Qt.AlignmentFlag.AlignHCenter)
        lay = QVBoxLayout(self)
        lay.addStretch(2)
        lay.addWidget(box, 0, Qt.AlignmentFlag.AlignHCenter)
        lay.addStretch(3)

    def show_error(self, error: str, can_demo: bool = True, title: str | None = None) -> None:
        if title is None:
            driver = any(w in error.lower() for w in ("driver", "nvml", "libnvidia"))
            title = "No NVIDIA driver found" if driver else "No GPU data"
        self.title.setText(title)
        plain(self.detail, error)
        self.detail.setMinimumHeight(self.detail.heightForWidth(600))
        self.demo_button.setVisible(can_demo)
        self.demo_button.setEnabled(can_demo)
