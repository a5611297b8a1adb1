"""Small widgets the planner tab's parts share: read-only tables that show
every row (the page scrolls, never the table), spin boxes with a "not set"
value, and a fold: prose behind a click."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)


def item(
    text: str, align_right: bool = False, tip: str | None = None, bold: bool = False
) -> QTableWidgetItem:
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

    def __init__(self, headers: list[str], stretch_last: bool = True, stretch: tuple[int, ...] = ()):
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
            mode = (
                QHeaderView.ResizeMode.Stretch
                if (stretch_last and i == last) or i in stretch
                else QHeaderView.ResizeMode.ResizeToContents
            )
            h.setSectionResizeMode(i, mode)

    def fit(self) -> None:
        """Resize rows to their text, then the table to its rows."""
        self.resizeRowsToContents()
        height = (
            self.horizontalHeader().sizeHint().height()
            + 2 * self.frameWidth()
            + self.verticalHeader().length()
        )
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


class Fold(QWidget):
    """A title that opens and closes the text under it (closed at first)."""

    def __init__(self, title: str, parent=None):
        super().__init__(parent)
        self.title = title
        self.button = QToolButton()
        self.button.setCheckable(True)
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.setArrowType(Qt.ArrowType.RightArrow)
        self.button.setAutoRaise(True)
        self.body = QLabel()
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setProperty("class", "muted")
        self.body.hide()
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(2)
        col.addWidget(self.button, 0, Qt.AlignmentFlag.AlignLeft)
        col.addWidget(self.body)
        self.button.toggled.connect(self.set_open)
        self.set_lines([])

    def set_open(self, open_: bool) -> None:
        self.button.setChecked(open_)
        self.button.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
        self.body.setVisible(open_)

    def set_lines(self, lines: list[str]) -> None:
        self.body.setText("\n".join(f"- {line}" for line in lines))
        self.button.setText(f"{self.title} ({len(lines)})" if lines else self.title)
        self.setVisible(bool(lines))

    def text(self) -> str:
        return self.body.text()
