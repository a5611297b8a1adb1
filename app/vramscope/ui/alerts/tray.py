"""Desktop notifications for new alerts while the window is hidden or minimised:
``TrayNotifier`` shows one through the system tray, and does nothing (says why)
where no tray exists."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QSystemTrayIcon

from vramscope.core.detectors.alert import CRITICAL, WARNING, severity_rank
from vramscope.ui.alerts.alert_texts import severity_icon


class TrayNotifier(QObject):
    """Desktop notifications for new alerts while the window is hidden or minimised.

    Degrades quietly: with no system tray, ``available`` is False, ``reason``
    says why, and ``notify`` only records what it would have shown.
    """

    def __init__(
        self,
        window=None,
        icon: QIcon | None = None,
        min_severity: str = WARNING,
        parent=None,
        tray: QSystemTrayIcon | None = None,
        available: bool | None = None,
    ):
        super().__init__(parent)
        self.window = window
        self.min_severity = min_severity
        self.available = QSystemTrayIcon.isSystemTrayAvailable() if available is None else available
        self.reason = None if self.available else "no system tray on this desktop"
        self.tray = tray
        if self.available and self.tray is None:
            self.tray = QSystemTrayIcon(icon or severity_icon(WARNING, 32), self)
            self.tray.setToolTip("vramscope")
            self.tray.show()
        if self.available and self.tray is not None and not self.tray.supportsMessages():
            self.available = False
            self.reason = "the system tray cannot show messages"
        self.shown: list[tuple[str, str]] = []  # (title, text) actually shown
        self.suppressed: list[tuple[str, str]] = []  # would have been shown (no tray / visible)
        self._notified: set[tuple] = set()

    def window_away(self) -> bool:
        w = self.window
        return w is None or not w.isVisible() or w.isMinimized()

    def notify(self, alerts) -> list[tuple[str, str]]:
        """Show what is new and severe enough; returns the (title, text) shown."""
        out = []
        for alert in alerts:
            if alert.key in self._notified or severity_rank(alert.severity) < severity_rank(
                self.min_severity
            ):
                continue
            self._notified.add(alert.key)
            title = f"vramscope: {alert.title}" + (f" on {alert.host}" if alert.host else "")
            text = alert.message
            if not self.available or not self.window_away():
                self.suppressed.append((title, text))
                continue
            icon = (
                QSystemTrayIcon.MessageIcon.Critical
                if alert.severity == CRITICAL
                else QSystemTrayIcon.MessageIcon.Warning
            )
            self.tray.showMessage(title, text, icon, 10_000)
            self.shown.append((title, text))
            out.append((title, text))
        return out

    def forget(self, current_keys) -> None:
        """Let alerts that cleared notify again when they come back."""
        self._notified &= set(current_keys)
