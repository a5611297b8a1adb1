"""The window's side of its sampler process (sources/remote/local_sampler.py): a
banner while that process is down -- why, when it is
started again, and a button to start it now. The window never waits on it:
the banner reads the host's state with each frame (the window's source makes
one promptly when the process goes down) and on the window's slow poll, and
every CHECK_MS while it shows."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from vramscope.ui.qt import theme

CHECK_MS = 500  # how often the banner, while shown, looks at the sampler's state


class SamplerBanner(QWidget):
    def __init__(self, source, parent=None):
        super().__init__(parent)
        self.source = source
        self.setObjectName("samplerBanner")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.restart = QPushButton("Restart now")
        self.restart.clicked.connect(self._restart)
        lay.addWidget(self.text, 1)
        lay.addWidget(self.restart)
        theme.styled(
            self,
            lambda s: (
                f"QWidget#samplerBanner {{ background: {s.ERROR}; border-radius: 4px; }}"
                " QWidget#samplerBanner QLabel { color: #ffffff; font-weight: 600; }"
            ),
        )
        self.hide()
        self.timer = QTimer(self)  # runs only while the banner shows (the countdown)
        self.timer.setInterval(CHECK_MS)
        self.timer.timeout.connect(self.check)

    def check(self, *_frame) -> None:
        why = self.source.stopped()
        if why is None:
            self.timer.stop()
            self.hide()
            return
        self.text.setText(f"{why}. The window shows the last GPUs seen until it is back.")
        self.show()
        if not self.timer.isActive():
            self.timer.start()

    def _restart(self) -> None:
        self.source.process.restart_now()
        self.text.setText("Starting the sampling process again…")


def attach_sampler_banner(window, source) -> SamplerBanner:
    banner = SamplerBanner(source, window)
    window.new_frame.connect(banner.check)
    window.timer.timeout.connect(banner.check)  # (a sampler that dies before its first frame)
    window.centralWidget().layout().insertWidget(0, banner)
    window.sampler_banner = banner
    return banner
