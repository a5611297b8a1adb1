"""The GPUs: one row per GPU, its card on the left and its timeline beside it."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QVBoxLayout, QWidget

from vramscope.core.samples import Frame, ProcessIdentity
from vramscope.core.store import Store
from vramscope.ui import theme
from vramscope.ui.bridge import BUSY_PROCESSES
from vramscope.ui.cards import GpuCard
from vramscope.ui.timeline import GpuTimeline

ROW_MIN_HEIGHT = 150
ROWS_AT_ONCE = 8  # GPU rows built in one go; more are built ROWS_PER_TURN per event-loop turn
ROWS_PER_TURN = 1
SLICE_INDENT = 18  # px: a MIG slice's row under its GPU's


class GpuRow(QWidget):
    """A GPU (or, with ``mig_uuid``, one MIG slice of it): card and timeline."""

    def __init__(self, index: int, colours: theme.ColourBook, parent=None,
                 mig_uuid: str | None = None):
        super().__init__(parent)
        self.card = GpuCard(index)
        self.timeline = GpuTimeline(index, colours, mig_uuid=mig_uuid)
        lay = QHBoxLayout(self)
        # a slice sits under its GPU, indented
        lay.setContentsMargins(SLICE_INDENT if mig_uuid else 0, 0, 0, 0)
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
        self.slice_rows: dict[tuple[int, str], GpuRow] = {}  # (GPU index, MIG uuid)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self._inner = QWidget()
        self._layout = QVBoxLayout(self._inner)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(8)
        self.setWidget(self._inner)
        self._pending = None
        self._stale: set[int] = set()  # timelines to redraw when in view
        self._stale_cards: set[int] = set()  # cards scrolled out when a frame came
        self._in_pieces = False
        self._next_piece = QTimer(self)  # the next timeline of a busy machine's frame
        self._next_piece.setSingleShot(True)
        self._next_piece.setInterval(0)
        self._next_piece.timeout.connect(self._update_visible)
        self._frame: Frame | None = None  # the latest frame, for rows still to be built
        self._more_rows = QTimer(self)  # a big box's rows are built a few per event-loop turn
        self._more_rows.setSingleShot(True)
        self._more_rows.setInterval(0)
        self._more_rows.timeout.connect(self._build_more_rows)
        self.verticalScrollBar().valueChanged.connect(self._update_visible)

    def set_plot_style(self, style: str) -> None:
        """"stacked" (processes stacked, largest at the bottom) or "lines"."""
        if style not in ("stacked", "lines"):
            raise ValueError(f"unknown plot style {style!r}; choose stacked or lines")
        changed = style != self.plot_style
        self.plot_style = style
        for row in self._all_rows().values():
            row.timeline.set_style(style)
        if changed:
            self.plot_style_changed.emit(style)
            self._stale = set(self._all_rows())
            self._update_visible()

    def set_card_details(self, shown: bool) -> None:
        self.card_details = bool(shown)
        for row in self._all_rows().values():
            row.card.set_details(self.card_details)

    def _card_toggled(self, shown: bool) -> None:
        self.set_card_details(shown)
        self.card_details_changed.emit(shown)

    def set_alerted(self, identities) -> None:
        """Processes with an active alert: always named in the legend, never grouped."""
        self.alerted = frozenset(identities)
        for row in self._all_rows().values():
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
        self._frame = frame
        indices = [g.index for g in frame.gpus]
        slices = [(g.index, s.uuid) for g in frame.gpus for s in g.slices if s.uuid]
        if sorted(indices) != sorted(self.rows) or set(slices) != set(self.slice_rows):
            self._rebuild(indices, slices)
        for gpu in frame.gpus:
            row = self.rows.get(gpu.index)
            if row is None:
                continue  # built on a later turn
            if row.isVisible() and not self._in_view(row):
                self._stale_cards.add(gpu.index)  # scrolled out: filled in when it comes back
            else:
                self._fill(gpu, row)

    def _fill(self, gpu, row: GpuRow) -> None:
        """``gpu``'s card and its MIG slices' rows."""
        self._stale_cards.discard(gpu.index)
        row.card.update_from(gpu)
        for mig in gpu.slices:
            row = self.slice_rows.get((gpu.index, mig.uuid))
            if row is not None:
                row.card.show_slice(gpu, mig)
                row.timeline.members = frozenset(p.identity for p in mig.processes)

    def _build_more_rows(self) -> None:
        if self._frame is not None:
            self.update_cards(self._frame)
            self._update_visible()

    def update_timelines(self, store: Store, since: float | None, t_end: float,
                         labels: dict[ProcessIdentity, str], processes: int = 0) -> None:
        """Redraw the timelines in view; the others when they scroll into view.
        With ``processes`` (in the frame) at BUSY_PROCESSES or more, one timeline
        per event-loop turn, so clicks and repaints go on between them."""
        self._pending = (store, since, t_end, labels)
        self._stale = set(self._all_rows())
        self._in_pieces = processes >= BUSY_PROCESSES
        self._update_visible()

    def _update_visible(self) -> None:
        if self._stale_cards and self._frame is not None:
            for gpu in self._frame.gpus:
                row = self.rows.get(gpu.index)
                if gpu.index in self._stale_cards and row is not None and self._in_view(row):
                    self._fill(gpu, row)
        if self._pending is None:
            return
        rows = self._all_rows()
        for i in [k for k in rows if k in self._stale] + [k for k in self._stale if k not in rows]:
            row = rows.get(i)
            if row is None:
                self._stale.discard(i)
            elif row.isVisible() and not self._in_view(row):
                continue  # shown but scrolled out of view: redrawn when it comes back
            else:
                row.timeline.update_from(*self._pending)
                self._stale.discard(i)
                if self._in_pieces:
                    if not self._next_piece.isActive():
                        self._next_piece.start()
                    return

    def highlight(self, key: tuple | None) -> None:
        for row in self._all_rows().values():
            row.timeline.highlight(key)

    def _all_rows(self) -> dict:
        """GPU rows by index and MIG slice rows by (index, uuid)."""
        return {**self.rows, **self.slice_rows}

    def _in_view(self, row: QWidget) -> bool:
        top = row.mapTo(self.viewport(), QPoint(0, 0)).y()
        return top + row.height() > 0 and top < self.viewport().height()

    def _rebuild(self, indices: list[int], slices: list[tuple[int, str]] = ()) -> None:
        for rows, keep in ((self.rows, indices), (self.slice_rows, slices)):
            for key in [k for k in rows if k not in keep]:
                row = rows.pop(key)
                self._layout.removeWidget(row)
                row.deleteLater()
        missing = [i for i in sorted(indices) if i not in self.rows]
        if len(missing) > ROWS_AT_ONCE:  # ~60 ms each: a 16-GPU box's rows over a few turns
            missing = missing[:ROWS_PER_TURN]
            self._more_rows.start()
        for i in missing:
            self.rows[i] = self._new_row(i)
        self._stale.update(missing)  # drawn with the next timelines, or by _build_more_rows
        for key in slices:  # in the frame's order (by instance id)
            if key not in self.slice_rows:
                self.slice_rows[key] = self._new_row(key[0], key[1])
        for i in sorted(self.rows):  # keep index order, each GPU's slices below it
            self._layout.removeWidget(self.rows[i])
            self._layout.addWidget(self.rows[i], 1)
            for key in [k for k in slices if k[0] == i]:
                self._layout.removeWidget(self.slice_rows[key])
                self._layout.addWidget(self.slice_rows[key], 1)

    def _new_row(self, index: int, mig_uuid: str | None = None) -> GpuRow:
        row = GpuRow(index, self.colours, mig_uuid=mig_uuid)
        row.timeline.set_style(self.plot_style)
        row.timeline.alerted = self.alerted
        row.card.set_details(self.card_details)
        row.card.details_toggled.connect(self._card_toggled)
        return row
