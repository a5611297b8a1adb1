"""The GPUs: one row per GPU, its card on the left and its timeline beside it."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QVBoxLayout, QWidget

from vramscope.core.samples import Frame, ProcessIdentity
from vramscope.core.store import Store
from vramscope.ui import theme
from vramscope.ui.cards import GpuCard
from vramscope.ui.timeline import GpuTimeline

ROW_MIN_HEIGHT = 150


class GpuRow(QWidget):
    def __init__(self, index: int, colours: theme.ColourBook, parent=None):
        super().__init__(parent)
        self.card = GpuCard(index)
        self.timeline = GpuTimeline(index, colours)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(8)
        lay.addWidget(self.card)
        lay.addWidget(self.timeline, 1)
        self.setMinimumHeight(ROW_MIN_HEIGHT)


class GpuPanel(QScrollArea):
    """The GPU rows in a scroll area: rows scrolled out of view are not redrawn."""

    plot_style_changed = Signal(str)  # "stacked" or "lines"
    card_details_changed = Signal(bool)

    def __init__(self, colours: theme.ColourBook, parent=None):
        super().__init__(parent)
        self.colours = colours
        self.plot_style = "stacked"
        self.card_details = False
        self.alerted: frozenset = frozenset()  # process identities with an active alert
        self.rows: dict[int, GpuRow] = {}
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self._inner = QWidget()
        self._layout = QVBoxLayout(self._inner)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(8)
        self.setWidget(self._inner)
        self._pending = None
        self._stale: set[int] = set()
        self.verticalScrollBar().valueChanged.connect(self._update_visible)

    def set_plot_style(self, style: str) -> None:
        """"stacked" (processes stacked, largest at the bottom) or "lines"."""
        if style not in ("stacked", "lines"):
            raise ValueError(f"unknown plot style {style!r}; choose stacked or lines")
        changed = style != self.plot_style
        self.plot_style = style
        for row in self.rows.values():
            row.timeline.set_style(style)
        if changed:
            self.plot_style_changed.emit(style)
            self._stale = set(self.rows)
            self._update_visible()

    def set_card_details(self, shown: bool) -> None:
        self.card_details = bool(shown)
        for row in self.rows.values():
            row.card.set_details(self.card_details)

    def _card_toggled(self, shown: bool) -> None:
        self.set_card_details(shown)
        self.card_details_changed.emit(shown)

    def set_alerted(self, identities) -> None:
        """Processes with an active alert: always named in the legend, never grouped."""
        self.alerted = frozenset(identities)
        for row in self.rows.values():
            row.timeline.alerted = self.alerted

    def minimum_rows_height(self) -> int:
        """Height for every GPU row at its minimum (at most two rows: more scroll)."""
        n = min(2, max(1, len(self.rows)))
        return n * ROW_MIN_HEIGHT + (n - 1) * self._layout.spacing() + 2 * self.frameWidth() + 4

    @property
    def cards(self) -> dict[int, GpuCard]:
        return {i: r.card for i, r in self.rows.items()}

    @property
    def timelines(self) -> dict[int, GpuTimeline]:
        return {i: r.timeline for i, r in self.rows.items()}

    def update_cards(self, frame: Frame) -> None:
        indices = [g.index for g in frame.gpus]
        if sorted(indices) != sorted(self.rows):
            self._rebuild(indices)
        for gpu in frame.gpus:
            self.rows[gpu.index].card.update_from(gpu)

    def update_timelines(self, store: Store, since: float | None, t_end: float,
                         labels: dict[ProcessIdentity, str]) -> None:
        """Redraw the timelines in view; the others when they scroll into view."""
        self._pending = (store, since, t_end, labels)
        self._stale = set(self.rows)
        self._update_visible()

    def _update_visible(self) -> None:
        if self._pending is None:
            return
        for i in list(self._stale):
            row = self.rows.get(i)
            if row is None:
                self._stale.discard(i)
            elif row.isVisible() and not self._in_view(row):
                continue  # shown but scrolled out of view: redrawn when it comes back
            else:
                row.timeline.update_from(*self._pending)
                self._stale.discard(i)

    def highlight(self, key: tuple | None) -> None:
        for row in self.rows.values():
            row.timeline.highlight(key)

    def _in_view(self, row: QWidget) -> bool:
        top = row.mapTo(self.viewport(), QPoint(0, 0)).y()
        return top + row.height() > 0 and top < self.viewport().height()

    def _rebuild(self, indices: list[int]) -> None:
        for i in [i for i in self.rows if i not in indices]:
            row = self.rows.pop(i)
            self._layout.removeWidget(row)
            row.deleteLater()
        for i in sorted(indices):
            if i not in self.rows:
                row = self.rows[i] = GpuRow(i, self.colours)
                row.timeline.set_style(self.plot_style)
                row.timeline.alerted = self.alerted
                row.card.set_details(self.card_details)
                row.card.details_toggled.connect(self._card_toggled)
        for i in sorted(self.rows):  # keep index order
            self._layout.removeWidget(self.rows[i])
            self._layout.addWidget(self.rows[i], 1)
