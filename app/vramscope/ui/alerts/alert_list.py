"""The alerts' rows: one per alert, most urgent first, then the conditions being
watched (greyed, a hollow ring); acknowledged and muted alerts greyed when shown.

A row carries its Alert (or Watch) so the selection survives a rebuild: the
panel (ui/alerts/alerts_panel.py) fills the list with ``fill`` and reads the rows back
with ``alerts``, ``watching`` and ``selected_alert``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeWidget, QTreeWidgetItem

from vramscope.core.detectors.alert import Alert
from vramscope.ui.qt import theme
from vramscope.ui.alerts.alert_texts import WATCHING, first_sentence, severity_icon, since_text
from vramscope.ui.qt.safe_text import tip

COLUMNS = ("Severity", "What", "Since", "Evidence", "Fix")
ALERT_ROLE = Qt.ItemDataRole.UserRole + 1
WATCH_ROLE = Qt.ItemDataRole.UserRole + 2


class AlertList(QTreeWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.hidden: set[tuple] = set()  # keys of the acknowledged or muted alerts
        self.setColumnCount(len(COLUMNS))
        self.setHeaderLabels(list(COLUMNS))
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.setColumnWidth(1, 380)
        self.setColumnWidth(3, 300)

    def fit(self, width: int) -> None:
        """ "What" and "Evidence" share ``width`` (the figures sit mid-sentence): 42 % and 24 %."""
        self.setColumnWidth(1, max(380, int(width * 0.42)))
        self.setColumnWidth(3, max(220, int(width * 0.24)))

    def fill(self, shown: list[Alert], watching: list, hidden: set[tuple], now: float, keep) -> None:
        """Rows for ``shown``, then ``watching``; the alert keyed ``keep`` (else the
        first) selected. Signals are blocked: the panel says what changed."""
        self.hidden = hidden
        self.blockSignals(True)
        self.clear()
        select = None
        for alert in shown:
            item = QTreeWidgetItem(
                [
                    alert.severity,
                    f"{alert.title}: {alert.message}",
                    since_text(alert.since, now),
                    alert.evidence[0] if alert.evidence else "",
                    first_sentence(alert.fix),
                ]
            )
            item.setData(0, ALERT_ROLE, alert)
            item.setToolTip(1, tip(alert.message))  # alerts quote commands and hosts
            item.setToolTip(3, tip("\n".join(alert.evidence)))
            item.setToolTip(4, tip(alert.fix))
            self._colour_row(item, theme.current())
            self.addTopLevelItem(item)
            if alert.key == keep:
                select = item
        for watch in watching:
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
            item.setData(0, WATCH_ROLE, watch)
            item.setToolTip(1, f"{watch.title}: {watch.message}; {watch.becomes} -- nothing to do yet")
            self._colour_row(item, theme.current())
            self.addTopLevelItem(item)
        if select is None and shown:
            select = self.topLevelItem(0)
        if select is not None:
            self.setCurrentItem(select)
        self.blockSignals(False)

    def alerts(self) -> list[Alert]:
        """The alerts as listed (rows in order)."""
        rows = (item.data(0, ALERT_ROLE) for item in self._items())
        return [a for a in rows if a is not None]

    def watching(self) -> list:
        """The watched conditions as listed (below the alerts)."""
        rows = (item.data(0, WATCH_ROLE) for item in self._items())
        return [w for w in rows if w is not None]

    def selected_alert(self) -> Alert | None:
        item = self.currentItem()
        return item.data(0, ALERT_ROLE) if item is not None else None

    def select_alert(self, key: tuple) -> bool:
        for item in self._items():
            alert = item.data(0, ALERT_ROLE)
            if alert is not None and alert.key == key:
                self.setCurrentItem(item)
                return True
        return False

    def recolour(self, s: theme.Scheme) -> None:
        """The severity dots and greyed rows in scheme ``s`` (a live switch)."""
        for item in self._items():
            self._colour_row(item, s)

    def _items(self) -> list[QTreeWidgetItem]:
        items = (self.topLevelItem(i) for i in range(self.topLevelItemCount()))
        return [item for item in items if item is not None]

    def _colour_row(self, item: QTreeWidgetItem, s: theme.Scheme) -> None:
        alert = item.data(0, ALERT_ROLE)
        if alert is None:  # a watched condition: a hollow ring, greyed
            item.setIcon(0, severity_icon(WATCHING, s=s))
            for col in range(len(COLUMNS)):
                item.setForeground(col, QColor(s.MUTED))
            return
        item.setIcon(0, severity_icon(alert.severity, s=s))
        if alert.key in self.hidden:  # acknowledged or muted: greyed out
            for col in range(len(COLUMNS)):
                item.setForeground(col, QColor(s.MUTED))
