"""The GPU rows, top to bottom: a row per GPU -- its card on the left, its
timeline beside it -- and under it a row per MIG slice, indented.

``GpuRows`` is the widget inside the monitor's scroll area (ui/monitor/gpu_panel.py):
it keeps the rows in the frame's order, adds and removes them as GPUs and slices
come and go, and says how tall they must be. A row's card and timeline are made
only when the panel asks (``GpuRow.build``): a big box's rows start empty, at
their final height.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget

from vramscope.ui.monitor.cards import GpuCard
from vramscope.ui.qt.pens import ColourBook
from vramscope.ui.timeline.gpu_timeline import GpuTimeline

ROW_MIN_HEIGHT = 150
SLICE_INDENT = 18  # px: a MIG slice's row under its GPU's


class GpuRow(QWidget):
    """A GPU (or, with ``mig_uuid``, one MIG slice of it): card and timeline.
    ``card`` and ``timeline`` are None until ``build`` (the row holds its place)."""

    def __init__(
        self,
        index: int,
        colours: ColourBook,
        parent=None,
        mig_uuid: str | None = None,
        build: bool = True,
    ):
        super().__init__(parent)
        self.index, self.mig_uuid, self._colours = index, mig_uuid, colours
        self.card: GpuCard | None = None
        self.timeline: GpuTimeline | None = None
        self._lay = QHBoxLayout(self)
        # a slice sits under its GPU, indented
        self._lay.setContentsMargins(SLICE_INDENT if mig_uuid else 0, 0, 0, 0)
        self._lay.setSpacing(8)
        self.setMinimumHeight(ROW_MIN_HEIGHT)
        if build:
            self.build()

    @property
    def key(self) -> int | tuple[int, str]:
        """Its key in GpuRows.rows (the GPU index) or slice_rows ((index, MIG uuid))."""
        return (self.index, self.mig_uuid) if self.mig_uuid else self.index

    def build(self) -> None:
        if self.card is None:
            self.card = GpuCard(self.index)
            self.timeline = GpuTimeline(self.index, self._colours, mig_uuid=self.mig_uuid)
            self._lay.addWidget(self.card)
            self._lay.addWidget(self.timeline, 1)


class GpuRows(QWidget):
    """``rows``: GPU rows by index; ``slice_rows``: MIG slice rows by (index, uuid)."""

    def __init__(self, colours: ColourBook, parent=None):
        super().__init__(parent)
        self.colours = colours
        self.rows: dict[int, GpuRow] = {}
        self.slice_rows: dict[tuple[int, str], GpuRow] = {}  # (GPU index, MIG uuid)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(8)

    def all(self) -> dict:
        """GPU rows by index and MIG slice rows by (index, uuid), top to bottom."""
        out: dict = {}
        for i in sorted(self.rows):
            out[i] = self.rows[i]
            out.update((k, r) for k, r in self.slice_rows.items() if k[0] == i)
        return out

    def built(self) -> list[GpuRow]:
        """The rows given their card and timeline, top to bottom."""
        return [r for r in self.all().values() if r.card is not None]

    def rebuild(self, indices: Sequence[int], slices: Sequence[tuple[int, str]] = ()) -> list[GpuRow]:
        """Rows for these GPUs and slices (new ones empty, gone ones removed), in
        order; returns the rows top to bottom."""
        gone = [self.rows.pop(i) for i in [i for i in self.rows if i not in indices]]
        gone += [self.slice_rows.pop(k) for k in [k for k in self.slice_rows if k not in slices]]
        for row in gone:
            self._layout.removeWidget(row)
            row.deleteLater()
        for i in indices:
            if i not in self.rows:
                self.rows[i] = GpuRow(i, self.colours, build=False)
        # slices in the frame's order (by instance id), which all() keeps
        self.slice_rows = {
            key: self.slice_rows.get(key) or GpuRow(key[0], self.colours, mig_uuid=key[1], build=False)
            for key in slices
        }
        order = list(self.all().values())
        for position, row in enumerate(order):
            if self._layout.indexOf(row) != position:
                self._layout.removeWidget(row)
                self._layout.insertWidget(position, row, 1)
        return order

    def laid_out(self) -> bool:
        """Whether the rows are in their places (the scroll area sizes them a turn
        after they are added; until then they overlap at the top)."""
        return self.height() >= self._layout.minimumSize().height()

    def minimum_height(self, n: int) -> int:
        """Height for the first ``n`` rows at their minimum."""
        # a row's card can need more than ROW_MIN_HEIGHT (its lines of text): the
        # rows' own minimum, so the second GPU's axes are never cut by the table
        heights = [max(ROW_MIN_HEIGHT, r.minimumSizeHint().height()) for r in list(self.all().values())[:n]]
        heights += [ROW_MIN_HEIGHT] * (n - len(heights))
        return sum(heights) + (n - 1) * self._layout.spacing()
