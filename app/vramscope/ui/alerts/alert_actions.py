"""What the user can do about the selected alert: acknowledge it, mute its
process, end its process -- the buttons under the alerts list and the rules
that enable them.

Ending a process asks the process anew on a worker and opens the confirmation
when the answer comes (ui/end_process/end_process_flow.py): never on demo data (invented
PIDs), never read-only. The engine's calls (acknowledge, mute) are quick and
local; the panel (ui/alerts/alerts_panel.py) refreshes the list after each
(``changed``).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QPushButton, QWidget

from vramscope.core.detectors.alert import Alert
from vramscope.ui.qt.bridge import Bridge
from vramscope.ui.end_process.end_process_dialog import EndProcessDialog
from vramscope.ui.end_process.end_process_flow import EndProcessFlow


NOT_ONE_PROCESS = "This alert is not about one process."


class AlertActions(QWidget):
    """The buttons; ``selected()`` is the alert they act on (None: none selected)."""

    message = Signal(str)  # what happened, in a sentence
    changed = Signal()  # the engine's view of the alerts changed (acknowledged, muted)
    process_ended = Signal(int, float)  # pid, start time
    dialog_opened = Signal(object)  # an EndProcessDialog, once the process was checked anew

    def __init__(
        self,
        selected: Callable[[], Alert | None],
        engine=None,
        actions=None,
        read_only: bool = False,
        bridge: Bridge | None = None,
        grace_seconds: float | None = None,
        parent=None,
    ):
        super().__init__(parent)
        self._selected = selected
        self.engine = engine
        self.process_actions = actions  # (QWidget.actions() is the widget's QActions)
        self.read_only = read_only or (actions is not None and actions.read_only)
        self.simulated = False
        self._grace_seconds = grace_seconds  # None: the actions' own
        self.active_dialog: EndProcessDialog | None = None
        # every action call may be an ssh round trip (sources/remote/hosts.py HostActions) or a
        # /proc walk: all of them run on workers, their answers come back through the bridge
        self._end_flow = EndProcessFlow(
            self,
            bridge if bridge is not None else Bridge(self),
            self.message.emit,
            self._opened,
            lambda pid, start_time: self.process_ended.emit(pid, start_time or 0.0),
        )
        self.ack_button = QPushButton("Acknowledge")
        self.mute_button = QPushButton("Mute process")
        self.end_button = QPushButton("End process\u2026")
        self.show_hidden = QCheckBox("Show acknowledged / muted")
        self.ack_button.clicked.connect(self.acknowledge_selected)
        self.mute_button.clicked.connect(self.toggle_mute_selected)
        self.end_button.clicked.connect(self.end_selected)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        for w in (self.ack_button, self.mute_button, self.end_button):
            row.addWidget(w)
        row.addStretch(1)
        row.addWidget(self.show_hidden)
        self.update_buttons()

    def acknowledge_selected(self) -> None:
        alert = self._selected()
        if alert is None or self.engine is None:
            return
        self.engine.acknowledge(alert)
        self.message.emit(f"Acknowledged: {alert.title} -- hidden until it clears or gets worse.")
        self.changed.emit()

    def toggle_mute_selected(self) -> None:
        alert = self._selected()
        if alert is None or alert.identity is None or self.engine is None:
            return
        if self.engine.is_muted(alert.identity):
            self.engine.unmute(alert.identity)
            self.message.emit(f"Unmuted pid {alert.pid}.")
        else:
            self.engine.mute(alert.identity)
            self.message.emit(f"Muted pid {alert.pid}: no alerts for this process until it exits.")
        self.changed.emit()

    def end_selected(self) -> bool:
        alert = self._selected()
        if alert is None:
            return False
        return self.request_end(alert)

    def request_end(self, alert: Alert) -> bool:
        """Check the alert's process anew on a worker, then open the confirmation
        (non-blocking; ``dialog_opened`` says when). False when it cannot be asked."""
        why = self.cannot_act(alert)
        if why is not None or alert.pid is None:
            self.message.emit(why or NOT_ONE_PROCESS)
            return False
        self._end_flow.start(
            self.process_actions,
            alert.pid,
            alert.start_time,
            memory=alert.frees,
            grace_seconds=self._grace_seconds,
        )
        return True

    def _opened(self, dialog) -> None:
        self.active_dialog = dialog
        self.dialog_opened.emit(dialog)

    def cannot_act(self, alert: Alert) -> str | None:
        """Why the alert's process cannot be ended from here (None: it can)."""
        if alert.pid is None:
            return NOT_ONE_PROCESS
        if self.simulated:
            return "Demo data: these PIDs are invented, so no process can be ended."
        if self.process_actions is None:
            return "Ending processes is not available here."
        if self.read_only:
            return "vramscope runs read-only (--read-only): ending processes is disabled."
        return None

    def update_buttons(self) -> None:
        """Enabled as the selected alert allows; the end button's tooltip says why not."""
        alert = self._selected()
        about = alert if alert is not None and alert.pid is not None else None  # one process
        self.ack_button.setEnabled(alert is not None and self.engine is not None)
        self.mute_button.setEnabled(about is not None and self.engine is not None)
        muted = about is not None and self.engine is not None and self.engine.is_muted(about.identity)
        self.mute_button.setText("Unmute process" if muted else "Mute process")
        why = self.cannot_act(about) if about is not None else "Select an alert about a process."
        self.end_button.setEnabled(about is not None and why is None)
        self.end_button.setToolTip(
            why or "Confirm, then SIGTERM; SIGKILL is offered if it survives the grace period."
        )
