"""What was alive at the cursor, grouped by stack: one row a stack (bytes, allocations,
the innermost frame in user code), its whole stack under it. Frames are the snapshot
author's text: shown as plain text, never as rich text."""

from __future__ import annotations

from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

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

    def show_groups(self, groups: list[dict]) -> None:
        """``groups``: summary.groups_json's dicts, largest first."""
        self.setUpdatesEnabled(False)
        self.clear()
        rows = []
        for g in groups[:ROWS]:
            item = QTreeWidgetItem([fmt_bytes(g["bytes"]), str(g["count"]), g["site"] or "(no frames)"])
            for f in g["frames"]:
                QTreeWidgetItem(item, ["", "", f"{f['filename']}:{f['line']} in {f['name']}"])
            rows.append(item)
        self.addTopLevelItems(rows)
        if rows:
            rows[0].setExpanded(True)  # the largest stack, whole
        for c in (0, 1):
            self.resizeColumnToContents(c)
        self.setUpdatesEnabled(True)
