"""The alerts list: severity, what, since when, evidence, fix -- and the safe
"End process..." action, acknowledge and mute.

Standalone: the main window creates ``AlertsPanel(engine, actions)``, calls
``refresh()`` from its UI timer (the engine is fed on the sampler thread and
``alerts()`` returns a copy), and connects the signals:

- ``alert_selected(object)``: an Alert was selected (highlight it on the timeline);
- ``alert_activated(object)``: double-click / Enter (jump to it);
- ``process_ended(int, float)``: a process ended from here (pid, start time);
- ``counts_changed(int, int)``: visible alerts, of which critical (tab badge);
- ``new_alerts(list)``: alerts not seen before (``TrayNotifier.notify``, ui/alerts/tray.py).

``EndProcessDialog`` is opened with ``open()`` (window-modal, not blocking),
so tests can inspect it and press its buttons. Every call that reaches the
process (describe, SIGTERM, SIGKILL, is it still there) runs on a worker --
over ssh each is a round trip -- and the next step follows from its answer;
``dialog_opened(object)`` says when a confirmation is up.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.detectors.alert import CRITICAL, INFO, WARNING, Alert
from vramscope.core.units import fmt_bytes, fmt_duration
from vramscope.ui.qt import theme
from vramscope.ui.window.bridge import Bridge
from vramscope.ui.processes.end_process_dialog import EndProcessDialog
from vramscope.ui.processes.end_process_flow import EndProcessFlow
from vramscope.ui.qt.safe_text import html_text, tip

COLUMNS = ("Severity", "What", "Since", "Evidence", "Fix")
_ALERT_ROLE = Qt.ItemDataRole.UserRole + 1
_WATCH_ROLE = Qt.ItemDataRole.UserRole + 2
WATCHING = "watching"  # the severity column of a condition on its way to an alert


def severity_colour(severity: str, s: theme.Scheme | None = None) -> str:
    """A severity's colour in scheme ``s`` (today's by default)."""
    s = s or theme.current()
    return {CRITICAL: s.ERROR, WARNING: s.WARNING, INFO: s.LINK}.get(severity, s.MUTED)


def severity_icon(severity: str, size: int = 12, s: theme.Scheme | None = None) -> QIcon:
    """A filled dot in the severity's colour; a hollow muted ring for "watching"."""
    pix = QPixmap(size, size)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    if severity == WATCHING:
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.setPen(QColor(severity_colour(severity, s)))
        p.drawEllipse(2, 2, size - 4, size - 4)
    else:
        p.setBrush(QColor(severity_colour(severity, s)))
        p.setPen(Qt.PenStyle.NoPen)
        p.drawEllipse(1, 1, size - 2, size - 2)
    p.end()
    return QIcon(pix)


def since_text(since: float | None, now: float) -> str:
    if since is None:
        return "n/a"
    clock = time.strftime("%H:%M:%S", time.localtime(since))
    return f"{clock} ({fmt_duration(now - since)} ago)"


def watch_html(watch, now: float, s: theme.Scheme | None = None) -> str:
    e = html_text  # the process and host names are strangers' text
    s = s or theme.current()
    return (
        f"<p><b style='color:{s.MUTED}'>WATCHING</b> <b>{e(watch.title)}</b> &mdash; "
        f"{e(watch.message)}</p>"
        f"<p style='color:{s.MUTED}'>since {e(since_text(watch.since, now))}; "
        f"{e(watch.becomes)} if nothing changes. Nothing to do yet.</p>"
    )


def alert_html(
    alert: Alert, now: float, hidden_note: str | None = None, s: theme.Scheme | None = None
) -> str:
    e = html_text  # alerts quote commands, hosts and agents' words
    s = s or theme.current()
    parts = [
        f"<p><b style='color:{severity_colour(alert.severity, s)}'>"
        f"{e(alert.severity.upper())}</b> "
        f"<b>{e(alert.title)}</b> &mdash; {e(alert.message)}</p>",
        f"<p style='color:{s.MUTED}'>since {e(since_text(alert.since, now))}"
        + (f"; {e(alert.gpu_label)}" if alert.gpu is not None else "")
        + (f"; pid {alert.pid}" if alert.pid is not None else "")
        + (f"; would free {e(fmt_bytes(alert.frees))}" if alert.frees else "")
        + (f"; {e(hidden_note)}" if hidden_note else "")
        + "</p>",
    ]
    # what to do before why: on a 1,024 x 700 window the fix is in view without scrolling
    if alert.fix:
        parts.append(f"<p><b>Fix</b><br>{e(alert.fix)}</p>")
    if alert.evidence:
        parts.append(
            "<p><b>Evidence</b></p><ul>" + "".join(f"<li>{e(line)}</li>" for line in alert.evidence) + "</ul>"
        )
    if alert.connection_file:
        parts.append(
            f"<p><b>Jupyter</b>: shut it down from Jupyter instead; connection file "
            f"<code>{e(alert.connection_file)}</code></p>"
        )
    return "".join(parts)


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
        self.actions = actions
        # every action call may be an ssh round trip (sources/remote/hosts.py HostActions) or a
        # /proc walk: all of them run on workers, their answers come back through here
        self._bridge = bridge if bridge is not None else Bridge(self)
        self.read_only = read_only or (actions is not None and actions.read_only)
        self.simulated = False
        self._clock = clock
        self._grace_seconds = grace_seconds  # None: the actions' own
        self._alerts: list[Alert] = []
        self._watching: list = []  # Watch values (core/detectors/watching.py), below the alerts
        self._hidden: set[tuple] = set()
        self._seen_keys: set[tuple] = set()
        self._signature: list | None = None  # what the list shows, to skip a rebuild while hidden
        self.active_dialog: EndProcessDialog | None = None
        self._end_flow = EndProcessFlow(
            self,
            self._bridge,
            self._say,
            self._opened,
            lambda pid, start_time: self.process_ended.emit(pid, start_time or 0.0),
        )

        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.tree.setColumnWidth(1, 380)
        self.tree.setColumnWidth(3, 300)
        self.tree.currentItemChanged.connect(self._on_current)
        self.tree.itemActivated.connect(lambda item, _col: self._emit_item(item, self.alert_activated))

        self.details = QTextBrowser()
        self.details.setOpenExternalLinks(False)
        self.empty = QLabel(_EMPTY)
        theme.styled(self.empty, lambda s: f"color: {s.MUTED};")

        self.ack_button = QPushButton("Acknowledge")
        self.mute_button = QPushButton("Mute process")
        self.end_button = QPushButton("End process\u2026")
        self.show_hidden = QCheckBox("Show acknowledged / muted")
        self.status = QLabel("")
        theme.styled(self.status, lambda s: f"color: {s.MUTED};")
        self.status.setWordWrap(True)
        self.ack_button.clicked.connect(self.acknowledge_selected)
        self.mute_button.clicked.connect(self.toggle_mute_selected)
        self.end_button.clicked.connect(self.end_selected)
        self.show_hidden.toggled.connect(lambda _on: self.refresh())

        buttons = QHBoxLayout()
        for w in (self.ack_button, self.mute_button, self.end_button):
            buttons.addWidget(w)
        buttons.addStretch(1)
        buttons.addWidget(self.show_hidden)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.empty)
        top_layout.addWidget(self.tree, 1)
        top_layout.addLayout(buttons)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)
        self._update_buttons()
        theme.follow(self, self.apply_theme)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # "What" and "Evidence" share the width (the figures sit mid-sentence): 42 % and 24 %
        width = self.width() - 24  # the panel's: a hidden tab's tree is resized only when shown
        self.tree.setColumnWidth(1, max(380, int(width * 0.42)))
        self.tree.setColumnWidth(3, max(220, int(width * 0.24)))

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refresh()  # the "ago" texts, stale while the tab was hidden

    # -- data -------------------------------------------------------------------------
    def set_simulated(self, simulated: bool) -> None:
        """Demo data names invented PIDs: no action may be offered on them."""
        self.simulated = simulated
        self._update_buttons()

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
        shown = [a for a in alerts if self.show_hidden.isChecked() or a.key not in hidden]
        signature = [(a.key, a.severity, a.message, a.key in hidden) for a in shown] + [
            (w.key, w.message) for w in self._watching
        ]
        if not self.isVisible() and signature == self._signature:
            # a hidden tab does no work: same alerts, only their "ago" texts would change
            visible = [a for a in alerts if a.key not in hidden]
            self.counts_changed.emit(len(visible), sum(a.severity == CRITICAL for a in visible))
            return
        self._signature = signature
        current = self.selected_alert()
        keep = current.key if current is not None else None
        now = self._clock()
        self.tree.blockSignals(True)
        self.tree.clear()
        select = None
        for alert in shown:
            item = QTreeWidgetItem(
                [
                    alert.severity,
                    f"{alert.title}: {alert.message}",
                    since_text(alert.since, now),
                    alert.evidence[0] if alert.evidence else "",
                    _first_sentence(alert.fix),
                ]
            )
            item.setData(0, _ALERT_ROLE, alert)
            item.setToolTip(1, tip(alert.message))  # alerts quote commands and hosts
            item.setToolTip(3, tip("\n".join(alert.evidence)))
            item.setToolTip(4, tip(alert.fix))
            self._colour_row(item, theme.current())
            self.tree.addTopLevelItem(item)
            if alert.key == keep:
                select = item
        for watch in self._watching:
            # the progress first: "kernel idle 9 of 10 min" is what the row is for
            item = QTreeWidgetItem(
                [
                    WATCHING,
                    f"{watch.progress} \u00b7 {watch.what}",
                    since_text(watch.since, now),
                    "",
                    watch.becomes,
                ]
            )
            item.setData(0, _WATCH_ROLE, watch)
            item.setToolTip(1, f"{watch.title}: {watch.message}; {watch.becomes} -- nothing to do yet")
            self._colour_row(item, theme.current())
            self.tree.addTopLevelItem(item)
        if select is None and shown:
            select = self.tree.topLevelItem(0)
        if select is not None:
            self.tree.setCurrentItem(select)
        self.tree.blockSignals(False)
        self.empty.setVisible(not shown)
        self.empty.setText(
            _EMPTY
            if not self._watching
            else f"No alerts. Watching {len(self._watching)}: listed below, not alerts yet."
        )
        self._show_details(self.selected_alert())
        self._update_buttons()
        visible = [a for a in alerts if a.key not in hidden]
        self.counts_changed.emit(len(visible), sum(a.severity == CRITICAL for a in visible))
        if new:
            self.new_alerts.emit(new)
        selected = self.selected_alert()
        if selected is not None and (current is None or selected.key != current.key):
            self.alert_selected.emit(selected)

    def alerts(self) -> list[Alert]:
        """The alerts as listed (rows in order)."""
        rows = (self.tree.topLevelItem(i).data(0, _ALERT_ROLE) for i in range(self.tree.topLevelItemCount()))
        return [a for a in rows if a is not None]

    def watching(self) -> list:
        """The watched conditions as listed (below the alerts)."""
        rows = (self.tree.topLevelItem(i).data(0, _WATCH_ROLE) for i in range(self.tree.topLevelItemCount()))
        return [w for w in rows if w is not None]

    def selected_alert(self) -> Alert | None:
        item = self.tree.currentItem()
        return item.data(0, _ALERT_ROLE) if item is not None else None

    def select_alert(self, key: tuple) -> bool:
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            alert = item.data(0, _ALERT_ROLE)
            if alert is not None and alert.key == key:
                self.tree.setCurrentItem(item)
                return True
        return False

    # -- user choices -------------------------------------------------------------------
    def acknowledge_selected(self) -> None:
        alert = self.selected_alert()
        if alert is None or self.engine is None:
            return
        self.engine.acknowledge(alert)
        self._say(f"Acknowledged: {alert.title} -- hidden until it clears or gets worse.")
        self.refresh()

    def toggle_mute_selected(self) -> None:
        alert = self.selected_alert()
        if alert is None or alert.identity is None or self.engine is None:
            return
        if self.engine.is_muted(alert.identity):
            self.engine.unmute(alert.identity)
            self._say(f"Unmuted pid {alert.pid}.")
        else:
            self.engine.mute(alert.identity)
            self._say(f"Muted pid {alert.pid}: no alerts for this process until it exits.")
        self.refresh()

    def end_selected(self) -> bool:
        alert = self.selected_alert()
        if alert is None:
            return False
        return self.request_end(alert)

    def request_end(self, alert: Alert) -> bool:
        """Check the alert's process anew on a worker, then open the confirmation
        (non-blocking; ``dialog_opened`` says when). False when it cannot be asked."""
        why = self._cannot_act(alert)
        if why:
            self._say(why)
            return False
        self._end_flow.start(
            self.actions, alert.pid, alert.start_time, memory=alert.frees, grace_seconds=self._grace_seconds
        )
        return True

    def _opened(self, dialog) -> None:
        self.active_dialog = dialog
        self.dialog_opened.emit(dialog)

    def _cannot_act(self, alert: Alert) -> str | None:
        if alert.pid is None:
            return "This alert is not about one process."
        if self.simulated:
            return "Demo data: these PIDs are invented, so no process can be ended."
        if self.actions is None:
            return "Ending processes is not available here."
        if self.read_only:
            return "vramscope runs read-only (--read-only): ending processes is disabled."
        return None

    # -- display ----------------------------------------------------------------------
    def apply_theme(self, s: theme.Scheme) -> None:
        """Re-colour the rows' severity dots and muted rows, and the details (a live switch)."""
        for i in range(self.tree.topLevelItemCount()):
            self._colour_row(self.tree.topLevelItem(i), s)
        self._show_details(self.selected_alert())

    def _colour_row(self, item: QTreeWidgetItem, s: theme.Scheme) -> None:
        alert = item.data(0, _ALERT_ROLE)
        if alert is None:  # a watched condition: a hollow ring, greyed
            item.setIcon(0, severity_icon(WATCHING, s=s))
            for col in range(len(COLUMNS)):
                item.setForeground(col, QColor(s.MUTED))
            return
        item.setIcon(0, severity_icon(alert.severity, s=s))
        if alert.key in self._hidden:  # acknowledged or muted: greyed out
            for col in range(len(COLUMNS)):
                item.setForeground(col, QColor(s.MUTED))

    def _on_current(self, current, _previous) -> None:
        alert = current.data(0, _ALERT_ROLE) if current is not None else None
        watch = current.data(0, _WATCH_ROLE) if current is not None else None
        if watch is not None:
            self.details.setHtml(watch_html(watch, self._clock()))
        else:
            self._show_details(alert)
        self._update_buttons()
        if alert is not None:
            self.alert_selected.emit(alert)

    def _emit_item(self, item, signal) -> None:
        alert = item.data(0, _ALERT_ROLE) if item is not None else None
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

    def _update_buttons(self) -> None:
        alert = self.selected_alert()
        has = alert is not None
        per_process = has and alert.pid is not None
        self.ack_button.setEnabled(has and self.engine is not None)
        self.mute_button.setEnabled(per_process and self.engine is not None)
        if per_process and self.engine is not None and self.engine.is_muted(alert.identity):
            self.mute_button.setText("Unmute process")
        else:
            self.mute_button.setText("Mute process")
        why = self._cannot_act(alert) if per_process else "Select an alert about a process."
        self.end_button.setEnabled(per_process and why is None)
        self.end_button.setToolTip(
            why or "Confirm, then SIGTERM; SIGKILL is offered if it survives the grace period."
        )

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.action_message.emit(text)


def _first_sentence(text: str) -> str:
    if not text:
        return ""
    for stop in (". ", ": "):
        i = text.find(stop)
        if 0 < i < 140:
            return text[: i + 1]
    return text[:140] + ("\u2026" if len(text) > 140 else "")
