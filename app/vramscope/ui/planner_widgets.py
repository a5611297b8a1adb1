"""Small widgets the planner tab's parts share: read-only tables that show
every row (the page scrolls, never the table), spin boxes with a "not set"
value."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QSizePolicy, QSpinBox,
                               QTableWidget, QTableWidgetItem)


def item(text: str, align_right: bool = False, tip: str | None = None,
         bold: bool = False) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    it.setFlags(it.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if align_right:
        it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if tip:
        it.setToolTip(tip)
    if bold:
        font = it.font()
        font.setBold(True)
        it.setFont(font)
    return it


class FullTable(QTableWidget):
    """A table as tall as its rows: every row visible, the page around it scrolls."""

    def __init__(self, headers: list[str], stretch_last: bool = True):
        super().__init__(0, len(headers))
        self.setHorizontalHeaderLabels(headers)
        self.verticalHeader().setVisible(False)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        h = self.horizontalHeader()
        self._refit = QTimer(self)
        self._refit.setSingleShot(True)
        self._refit.setInterval(0)
        self._refit.timeout.connect(self.fit)
        h.sectionResized.connect(lambda *_: self._refit.start())
        last = len(headers) - 1
        for i in range(len(headers)):
            mode = (QHeaderView.ResizeMode.Stretch if stretch_last and i == last
                    else QHeaderView.ResizeMode.ResizeToContents)
            h.setSectionResizeMode(i, mode)

    def fit(self) -> None:
        """Resize rows to their text, then the table to its rows."""
        self.resizeRowsToContents()
        height = (self.horizontalHeader().sizeHint().height() + 2 * self.frameWidth()
                  + self.verticalHeader().length())
        if self.horizontalScrollBar().isVisible():
            height += self.horizontalScrollBar().sizeHint().height()
        if self.height() != height + 2:
            self.setFixedHeight(height + 2)

    def resizeEvent(self, event):  # wrapped text changes height with the width
        super().resizeEvent(event)
        self._refit.start()


def spin(minimum: int, maximum: int, value: int, special: str | None = None) -> QSpinBox:
    s = QSpinBox()
    s.setRange(minimum, maximum)
    s.setValue(value)
    s.setGroupSeparatorShown(True)
    if special:
        s.setSpecialValueText(special)  # shown at the minimum: "not planned", "off"
    return s
