"""What the window says while its sampler's first pass is still reading the
processes (core/stream/first_look.py): the GPUs' own figures are on screen,
their processes are not known yet -- which is not "no processes"."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QLabel

from vramscope.ui.qt import theme

READING = "reading…"  # a card's process count while they are read
TABLE_TEXT = "Reading the processes… each is listed here once the first pass has read it"


class PendingNote(QLabel):
    """A muted note over a table's empty rows, while its processes are being read
    (one line at the top: a table squeezed to a row or two still shows it)."""

    def __init__(self, view: QAbstractScrollArea):
        super().__init__(TABLE_TEXT, view.viewport())
        self.setObjectName("processesPending")
        self.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.setWordWrap(True)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        theme.styled(self, lambda s: f"color: {s.MUTED}; padding: 4px;")
        self._fit = _Fit(self)
        view.viewport().installEventFilter(self._fit)
        self.hide()

    def follow(self, pending: bool) -> None:
        if pending != self.isVisible():
            self.setGeometry(self.parentWidget().rect())
            self.setVisible(pending)


class _Fit(QObject):
    """Keeps the note as large as the table's viewport."""

    def __init__(self, note: PendingNote):
        super().__init__(note)
        self.note = note

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.note.setGeometry(watched.rect())
        return False
