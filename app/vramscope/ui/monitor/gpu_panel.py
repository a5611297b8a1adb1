"""The GPUs: one row per GPU, its card on the left and its timeline beside it
(the rows: ui/monitor/gpu_rows.py), in a scroll area that makes, fills and
redraws only the rows in view -- on a big box one per event-loop turn -- and
gives every row the view's settings (plot style, card details, alerts,
markers, the selected process)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QTimer, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

from vramscope.core.samples import Frame, ProcessIdentity
from vramscope.core.store.store import Store
from vramscope.core.settings.view_options import DEFAULT_PLOT_STYLE, PlotStyle
from vramscope.ui.qt import pens
from vramscope.ui.qt.bridge import BUSY_PROCESSES
from vramscope.ui.monitor.cards import GpuCard
from vramscope.ui.monitor.gpu_rows import GpuRow, GpuRows
from vramscope.ui.timeline.gpu_timeline import GpuTimeline

# Up to this many rows (GPUs and MIG slices) are made whole as they appear; a
# bigger box's rows start empty, at their final height, and each is made
# (card and timeline, ~30 ms, and its first plot) when it first comes into
# view, one per event-loop turn, so the window answers clicks in between.
ROWS_AT_ONCE = 8
SETTLE_MS = 20  # a row added (or made) is looked at again this much later


class GpuPanel(QScrollArea):
    """The GPU rows in a scroll area: rows scrolled out of view are not redrawn
    (nor, on a big box, made until they first come into view)."""

    plot_style_changed = Signal(str)  # "stacked" or "lines"
    card_details_changed = Signal(bool)
    row_built = Signal(object)  # a GpuRow just given its card and timeline

    def __init__(self, colours: pens.ColourBook, parent=None):
        super().__init__(parent)
        self.colours = colours
        self.plot_style = DEFAULT_PLOT_STYLE
        self.card_details = False
        self.alerted: frozenset = frozenset()  # process identities with an active alert
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.grid = GpuRows(colours)
        self.setWidget(self.grid)
        self._pending = None
        self._stale: set = set()  # timelines to redraw when in view
        self._stale_cards: set[int] = set()  # cards scrolled out when a frame came
        self._markers: dict[int, dict] = {}  # GPU index -> its alerts' markers
        self._highlighted: tuple | None = None
        self._in_pieces = False
        self._next_piece = QTimer(self)  # the next row of a big box to make or redraw
        self._next_piece.setSingleShot(True)
        self._next_piece.setInterval(0)
        self._next_piece.timeout.connect(self._update_visible)
        self._settle = QTimer(self)  # rows just added are shown and laid out a turn later
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._update_visible)
        self._frame: Frame | None = None  # the latest frame, for rows made later
        self.verticalScrollBar().valueChanged.connect(self._update_visible)

    def set_plot_style(self, style: str) -> None:
        """ "stacked" (processes stacked, largest at the bottom) or "lines"."""
        if style not in tuple(PlotStyle):
            raise ValueError(f"unknown plot style {style!r}; choose {' or '.join(PlotStyle)}")
        changed = style != self.plot_style
        self.plot_style = style
        for timeline in self.timelines.values():
            timeline.set_style(style)
        if changed:
            self.plot_style_changed.emit(style)
            self._stale = set(self.grid.all())
            self._update_visible()

    def set_card_details(self, shown: bool) -> None:
        self.card_details = bool(shown)
        for row in self.grid.built():
            row.card.set_details(self.card_details)

    def _card_toggled(self, shown: bool) -> None:
        self.set_card_details(shown)
        self.card_details_changed.emit(shown)

    def set_alerted(self, identities) -> None:
        """Processes with an active alert: always named in the legend, never grouped."""
        self.alerted = frozenset(identities)
        for row in self.grid.built():
            row.timeline.alerted = self.alerted

    def set_markers(self, by_gpu: dict[int, dict]) -> None:
        """Alert markers per GPU index (GpuTimeline.set_markers), kept for rows made later."""
        self._markers = by_gpu
        for row in self.grid.built():
            row.timeline.set_markers(by_gpu.get(row.index, {}))

    def minimum_rows_height(self) -> int:
        """Height for every GPU row at its minimum (at most two rows: more scroll)."""
        n = min(2, max(1, len(self.grid.rows)))
        return self.grid.minimum_height(n) + 2 * self.frameWidth() + 4

    @property
    def cards(self) -> dict[int, GpuCard]:
        """The GPU rows' cards made so far, by index."""
        return {i: r.card for i, r in self.grid.rows.items() if r.card is not None}

    @property
    def timelines(self) -> dict[int, GpuTimeline]:
        """The GPU rows' timelines made so far, by index."""
        return {i: r.timeline for i, r in self.grid.rows.items() if r.timeline is not None}

    def update_cards(self, frame: Frame) -> None:
        self._frame = frame
        indices = [g.index for g in frame.gpus]
        slices = [(g.index, s.uuid) for g in frame.gpus for s in g.slices if s.uuid]
        if sorted(indices) != sorted(self.grid.rows) or set(slices) != set(self.grid.slice_rows):
            self._rebuild(indices, slices)
        for gpu in frame.gpus:
            row = self.grid.rows.get(gpu.index)
            if row is None:
                continue
            if row.card is not None and row.isVisible() and not self._in_view(row):
                self._stale_cards.add(gpu.index)  # scrolled out: filled in when it comes back
            else:
                self._fill(gpu)

    def _fill(self, gpu) -> None:
        """``gpu``'s card and its MIG slices' rows (those made)."""
        self._stale_cards.discard(gpu.index)
        row = self.grid.rows.get(gpu.index)
        if row is not None and row.card is not None:
            row.card.update_from(gpu)
        for mig in gpu.slices:
            row = self.grid.slice_rows.get((gpu.index, mig.uuid))
            if row is not None and row.card is not None:
                row.card.show_slice(gpu, mig)
                row.timeline.members = frozenset(p.identity for p in mig.processes)

    def update_timelines(
        self,
        store: Store,
        since: float | None,
        t_end: float,
        labels: dict[ProcessIdentity, str],
        processes: int = 0,
        kin: dict | None = None,
    ) -> None:
        """Redraw the timelines in view; the others when they scroll into view.
        With ``processes`` (in the frame) at BUSY_PROCESSES or more, one timeline
        per event-loop turn, from the next one, so clicks and repaints go on
        between them and the window's own update of the frame stays short."""
        self._pending = (store, since, t_end, labels, kin)
        self._stale = set(self.grid.all())
        self._in_pieces = processes >= BUSY_PROCESSES
        if self._in_pieces:  # the first one too, on its own turn (not in the caller's)
            self._next_piece.start()
        else:
            self._update_visible()

    def refresh_figures(self, store: Store) -> None:
        """The legends' figures from the store's latest points, in the rows drawn and in
        view (the curves are redrawn on their own clock: update_timelines)."""
        for key, row in self.grid.all().items():
            if row.card is not None and key not in self._stale and self._in_view(row):
                row.timeline.refresh_figures(store)

    def _update_visible(self) -> None:
        """Make, fill and redraw the rows in view: on a big box one per call,
        the next on the next event-loop turn."""
        if self._stale_cards and self._frame is not None:
            for gpu in self._frame.gpus:
                row = self.grid.rows.get(gpu.index)
                if gpu.index in self._stale_cards and row is not None and self._in_view(row):
                    self._fill(gpu)
        rows = self.grid.all()
        lazy = len(rows) > ROWS_AT_ONCE
        shown = self.isVisible()
        for key, row in rows.items():
            if row.card is None:
                if shown and (not row.isVisible() or not self.grid.laid_out()):
                    self._settle.start()  # just added: shown and laid out on a later turn
                    continue
                if shown and not self._in_view(row):
                    continue  # made when it comes into view
                self._build(row)
                self._stale.add(key)
                if lazy and shown:
                    self._next_piece.start()  # drawn on a later turn, once laid out
                    return
            if key not in self._stale or self._pending is None:
                continue
            if row.isVisible() and not self._in_view(row):
                continue  # shown but scrolled out of view: redrawn when it comes back
            if lazy and shown and not row.timeline.isVisible():
                self._settle.start()  # made this turn: drawn once shown
                continue
            row.timeline.update_from(*self._pending)
            self._stale.discard(key)
            if self._in_pieces or lazy:
                self._next_piece.start()
                return
        self._stale.intersection_update(rows)

    def _build(self, row: GpuRow) -> None:
        """Give a row its card and timeline, with the panel's settings and the latest frame."""
        row.build()
        row.timeline.set_style(self.plot_style)
        row.timeline.alerted = self.alerted
        if row.mig_uuid is None:
            row.timeline.set_markers(self._markers.get(row.index, {}))
        row.timeline.highlight(self._highlighted)
        row.card.set_details(self.card_details)
        row.card.details_toggled.connect(self._card_toggled)
        gpu = (
            next((g for g in self._frame.gpus if g.index == row.index), None)
            if self._frame is not None
            else None
        )
        if gpu is not None:
            self._fill(gpu)
        self.row_built.emit(row)

    def highlight(self, key: tuple | None) -> None:
        self._highlighted = key
        for timeline in (r.timeline for r in self.grid.built()):
            timeline.highlight(key)

    def _in_view(self, row: QWidget) -> bool:
        top = row.mapTo(self.viewport(), QPoint(0, 0)).y()
        return top + row.height() > 0 and top < self.viewport().height()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if any(r.card is None for r in self.grid.all().values()):
            self._next_piece.start()  # rows that came into view are made

    def _rebuild(self, indices: list[int], slices: list[tuple[int, str]] = ()) -> None:
        order = self.grid.rebuild(indices, slices)
        if len(indices) + len(slices) <= ROWS_AT_ONCE:  # else made as they come into view
            for row in order:
                if row.card is None:
                    self._build(row)
                    self._stale.add(row.key)
        else:
            self._next_piece.start()  # the rows in view, once laid out
