"""What was alive at the cursor, grouped by stack: one row a stack (bytes, allocations,
the innermost frame in user code), its whole stack under it. Frames are the snapshot
author's text: shown as plain text, never as rich text."""

from __future__ import annotations

from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from vramscope.core.snapshot.summary import site
from vramscope.core.units import fmt_bytes

ROWS = 200  # the largest stacks listed; the total line counts them all


class AliveTree(QTreeWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setColumnCount(3)
        self.setHeaderLabels(
            ["bytes", "allocations", "where (innermost frame in user code; expand for the stack)"]
        )
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setRootIsDecorated(True)
        self._frames: dict[int, list[tuple]] = {}
        self._sized = False
        self.itemExpanded.connect(self._fill)

    def _fill(self, item: QTreeWidgetItem) -> None:
        frames = self._frames.pop(id(item), None)
        if frames is not None:
            for filename, line, name in frames:
                QTreeWidgetItem(item, ["", "", f"{filename}:{line} in {name}"])

    def show_groups(self, stacks, groups: list[tuple[int, int, int]]) -> None:
        """``groups``: (stack id, bytes, count), largest first; ``stacks``: the snapshot's
        stacks.Stacks (a stack's frames are looked up when its row is opened, so a step
        of the cursor stays cheap)."""
        self.setUpdatesEnabled(False)
        self.clear()
        rows = []
        self._frames = {}
        for stack, nbytes, count in groups[:ROWS]:
            frames = stacks.frames_of(stack)
            item = QTreeWidgetItem([fmt_bytes(nbytes), str(count), site(frames) or "(no frames)"])
            if frames:
                item.setChildIndicatorPolicy(QTreeWidgetItem.ChildIndicatorPolicy.ShowIndicator)
                self._frames[id(item)] = frames
            rows.append(item)
        self.addTopLevelItems(rows)
        if rows:
            rows[0].setExpanded(True)  # the largest stack, whole
        if not self._sized and rows:
            for c in (0, 1):
                self.resizeColumnToContents(c)
                self.setColumnWidth(c, self.columnWidth(c) + 24)  # room for larger figures later
            self._sized = True
        self.setUpdatesEnabled(True)
