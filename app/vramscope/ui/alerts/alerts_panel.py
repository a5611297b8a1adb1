"""The alerts tab: the list (ui/alerts/alert_list.py), the selected alert's details
(ui/alerts/alert_texts.py), and what can be done about it -- acknowledge, mute, the safe
"End process..." (ui/alerts/alert_actions.py).

Standalone: the main window creates ``AlertsPanel(engine, actions)``, calls
``refresh()`` from its UI timer (the engine is fed on the sampler thread and
``alerts()`` returns a copy), and connects the signals:

- ``alert_selected(object)``: an Alert was selected (highlight it on the timeline);
- ``alert_activated(object)``: double-click / Enter (jump to it);
- ``process_ended(int, float)``: a process ended from here (pid, start time);
- ``counts_changed(int, int)``: visible alerts, of which critical (tab badge);
- ``new_alerts(list)``: alerts not seen before (``TrayNotifier.notify``, ui/alerts/tray.py).

``EndProcessDialog`` is opened (ui/alerts/alert_actions.py) with ``open()``
(window-modal, not blocking), so tests can inspect it and press its buttons. Every call that reaches the
process (describe, SIGTERM, SIGKILL, is it still there) runs on a worker --
over ssh each is a round trip -- and the next step follows from its answer;
``dialog_opened(object)`` says when a confirmation is up.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QTextBrowser, QVBoxLayout, QWidget

from vramscope.core.detectors.alert import CRITICAL, Alert
from vramscope.ui.qt import theme
from vramscope.ui.alerts.alert_actions import AlertActions
from vramscope.ui.alerts.alert_list import ALERT_ROLE, WATCH_ROLE, AlertList
from vramscope.ui.alerts.alert_texts import alert_html, watch_html
from vramscope.ui.qt.bridge import Bridge

_EMPTY = "No alerts. Squatters, leaks, fragmentation and near-OOM show up here."


class AlertsPanel(QWidget):
    alert_selected = Signal(object)
    alert_activated = Signal(object)
    process_ended = Signal(int, float)
    counts_changed = Signal(int, int)
    new_alerts = Signal(list)
    action_message = Signal(str)
    dialog_opened = Signal(object)  # an EndProcessDialog, once the process was checked anew

    def __init__(
        self,
        engine=None,
        actions=None,
        read_only: bool = False,
        parent=None,
        clock=time.time,
        grace_seconds: float | None = None,
        bridge: Bridge | None = None,
    ):
        super().__init__(parent)
        self.engine = engine
        self._clock = clock
        self._alerts: list[Alert] = []
        self._watching: list = []  # Watch values (core/detectors/watching.py), below the alerts
        self._hidden: set[tuple] = set()
        self._seen_keys: set[tuple] = set()
        self._signature: list | None = None  # what the list shows, to skip a rebuild while hidden

        self.tree = AlertList()
        self.tree.currentItemChanged.connect(self._on_current)
        self.tree.itemActivated.connect(lambda item, _col: self._emit_item(item, self.alert_activated))
        self.details = QTextBrowser()
        self.details.setOpenExternalLinks(False)
        self.empty = QLabel(_EMPTY)
        theme.styled(self.empty, lambda s: f"color: {s.MUTED};")
        self.buttons = AlertActions(
            self.tree.selected_alert, engine, actions, read_only, bridge, grace_seconds
        )
        self.buttons.message.connect(self._say)
        self.buttons.changed.connect(self.refresh)
        self.buttons.process_ended.connect(self.process_ended)
        self.buttons.dialog_opened.connect(self.dialog_opened)
        self.buttons.show_hidden.toggled.connect(lambda _on: self.refresh())
        self.status = QLabel("")
        theme.styled(self.status, lambda s: f"color: {s.MUTED};")
        self.status.setWordWrap(True)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.empty)
        top_layout.addWidget(self.tree, 1)
        top_layout.addWidget(self.buttons)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)
        theme.follow(self, self.apply_theme)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.tree.fit(self.width() - 24)  # the panel's: a hidden tab's tree is resized only when shown

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refresh()  # the "ago" texts, stale while the tab was hidden

    # -- data -------------------------------------------------------------------------
    def set_simulated(self, simulated: bool) -> None:
        """Demo data names invented PIDs: no action may be offered on them."""
        self.buttons.simulated = simulated
        self.buttons.update_buttons()

    def refresh(self) -> None:
        """Pull the engine's alerts (call from the UI timer)."""
        if self.engine is None:
            return
        everything = self.engine.alerts(include_hidden=True)
        hidden = {a.key for a in everything if self.engine.is_hidden(a)}
        watching = self.engine.watching() if hasattr(self.engine, "watching") else ()
        self.set_alerts(everything, hidden, watching)

    def set_alerts(self, alerts, hidden_keys=(), watching=()) -> None:
        """``alerts`` in the engine's order (most urgent first), then ``watching``:
        conditions on their way to an alert, listed below them, greyed, without actions."""
        alerts = list(alerts)
        self._watching = list(watching)
        hidden = set(hidden_keys)
        new = [a for a in alerts if a.key not in self._seen_keys and a.key not in hidden]
        self._seen_keys = {a.key for a in alerts}
        self._alerts = alerts
        self._hidden = hidden
        shown = [a for a in alerts if self.buttons.show_hidden.isChecked() or a.key not in hidden]
        signature = [(a.key, a.severity, a.message, a.key in hidden) for a in shown] + [
            (w.key, w.message) for w in self._watching
        ]
        visible = [a for a in alerts if a.key not in hidden]
        if not self.isVisible() and signature == self._signature:
            # a hidden tab does no work: same alerts, only their "ago" texts would change
            self.counts_changed.emit(len(visible), sum(a.severity == CRITICAL for a in visible))
            return
        self._signature = signature
        current = self.tree.selected_alert()
        self.tree.fill(
            shown, self._watching, hidden, self._clock(), current.key if current is not None else None
        )
        self.empty.setVisible(not shown)
        self.empty.setText(
            _EMPTY
            if not self._watching
            else f"No alerts. Watching {len(self._watching)}: listed below, not alerts yet."
        )
        self._show_details(self.tree.selected_alert())
        self.buttons.update_buttons()
        self.counts_changed.emit(len(visible), sum(a.severity == CRITICAL for a in visible))
        if new:
            self.new_alerts.emit(new)
        selected = self.tree.selected_alert()
        if selected is not None and (current is None or selected.key != current.key):
            self.alert_selected.emit(selected)

    def alerts(self) -> list[Alert]:
        """The alerts as listed (rows in order)."""
        return self.tree.alerts()

    def request_end(self, alert: Alert) -> bool:
        """End ``alert``'s process, confirmed (AlertActions.request_end)."""
        return self.buttons.request_end(alert)

    # -- display ----------------------------------------------------------------------
    def apply_theme(self, s: theme.Scheme) -> None:
        """Re-colour the rows' severity dots and muted rows, and the details (a live switch)."""
        self.tree.recolour(s)
        self._show_details(self.tree.selected_alert())

    def _on_current(self, current, _previous) -> None:
        alert = current.data(0, ALERT_ROLE) if current is not None else None
        watch = current.data(0, WATCH_ROLE) if current is not None else None
        if watch is not None:
            self.details.setHtml(watch_html(watch, self._clock()))
        else:
            self._show_details(alert)
        self.buttons.update_buttons()
        if alert is not None:
            self.alert_selected.emit(alert)

    def _emit_item(self, item, signal) -> None:
        alert = item.data(0, ALERT_ROLE) if item is not None else None
        if alert is not None:
            signal.emit(alert)

    def _show_details(self, alert: Alert | None) -> None:
        if alert is None:
            self.details.setHtml("")
            return
        note = None
        if alert.key in self._hidden:
            muted = self.engine is not None and self.engine.is_muted(alert.identity)
            note = "muted" if muted else "acknowledged"
        self.details.setHtml(alert_html(alert, self._clock(), note))

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.action_message.emit(text)
