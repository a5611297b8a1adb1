"""The agents tab's module tree: where a run's memory goes, per module.

Columns: name, weights, grads, optimizer state, activations, total and the
share of the device; sortable by any column (numbers as numbers), the largest
modules first, the top-level modules shown and the tree below them one click
away; the heading says which step was measured. A figure the agent could not
measure reads "n/a" with its reason in the tooltip. A click on a module
highlights it (the row stays highlighted across updates). The tree is rebuilt
only when new figures arrive (one sampled step in N).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.agent_figures.module_figures import FIGURE_LABELS, FIGURES
from vramscope.core.units import NA, fmt_bytes, fmt_percent
from vramscope.ui.qt import theme

COLUMNS = ("module", *(FIGURE_LABELS[f] for f in FIGURES), "total", "share of device")
TOTAL_COL, SHARE_COL = len(FIGURES) + 1, len(FIGURES) + 2
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
HIGHLIGHT = "#f5c542"
MAX_ROWS_SHOWN = 14  # the tree's height in rows before it scrolls


class _Item(QTreeWidgetItem):
    """Sorts numbers as numbers, "n/a" below every figure."""

    def __lt__(self, other) -> bool:
        col = self.treeWidget().sortColumn() if self.treeWidget() else 0
        a, b = self.data(col, SORT_ROLE), other.data(col, SORT_ROLE)
        if a is None or b is None:
            return super().__lt__(other)
        return a < b


class ModuleTree(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(2)
        self.heading = QLabel()
        theme.styled(self.heading, lambda s: f"color: {s.TEXT}; font-weight: 600;")
        layout.addWidget(self.heading)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setSortingEnabled(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in range(1, len(COLUMNS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.sortByColumn(TOTAL_COL, Qt.SortOrder.DescendingOrder)
        self.tree.itemClicked.connect(self._clicked)
        layout.addWidget(self.tree)
        self.highlighted: str | None = None  # the module clicked last
        self._shown: tuple = ()
        self.items: dict[str, QTreeWidgetItem] = {}
        self.setVisible(False)

    def update_view(self, modules: tuple, device_total: int | None) -> None:
        if modules == self._shown:
            return
        self._shown = modules
        self.setVisible(bool(modules))
        if not modules:
            return
        steps = sorted({m.measured_step for m in modules})
        self.heading.setText(
            f"Modules · measured at step {steps[-1]} (one sampled step; "
            "sorted by total, click a column to sort)"
        )
        expanded = {n for n, it in self.items.items() if it.isExpanded()}
        self.tree.setSortingEnabled(False)
        self.tree.clear()
        self.items = {}
        for m in sorted(modules, key=lambda m: m.name.count(".")):
            parent = self.items.get(m.parent) if m.parent else None
            item = _Item(parent if parent is not None else self.tree)
            self._fill(item, m, device_total)
            self.items[m.name] = item
        for name in expanded:
            if name in self.items:
                self.items[name].setExpanded(True)
        self.tree.setSortingEnabled(True)
        rows = min(MAX_ROWS_SHOWN, len(modules) + 1)  # (room for the tree below the top level)
        self.tree.setMinimumHeight(rows * (self.tree.fontMetrics().height() + 4) + 8)
        self._paint_highlight()

    def _fill(self, item: QTreeWidgetItem, m, device_total: int | None) -> None:
        label = m.name.rpartition(".")[2] if m.parent else m.name
        item.setText(0, label + (" (shared)" if m.shared else ""))
        item.setData(0, SORT_ROLE, m.name)
        item.setData(0, Qt.ItemDataRole.UserRole, m.name)
        item.setToolTip(0, m.name + (f"\n{m.why}" if m.why else ""))
        for col, f in enumerate(FIGURES, start=1):
            value = getattr(m, f)
            item.setText(col, fmt_bytes(value) if value is not None else NA)
            item.setData(col, SORT_ROLE, value if value is not None else -1)
            if value is None and m.why:
                item.setToolTip(col, m.why)
            item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        total = m.total
        item.setText(TOTAL_COL, fmt_bytes(total) if total is not None else NA)
        item.setData(TOTAL_COL, SORT_ROLE, total if total is not None else -1)
        share = total / device_total if total is not None and device_total else None
        item.setText(SHARE_COL, fmt_percent(100 * share) if share is not None else NA)
        item.setData(SHARE_COL, SORT_ROLE, share if share is not None else -1.0)
        for col in (TOTAL_COL, SHARE_COL):
            item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def _clicked(self, item: QTreeWidgetItem, column: int) -> None:
        self.highlighted = item.data(0, Qt.ItemDataRole.UserRole)
        self._paint_highlight()

    def _paint_highlight(self) -> None:
        bold = QFont(self.tree.font())
        bold.setBold(True)
        for name, item in self.items.items():
            on = name == self.highlighted
            for col in range(len(COLUMNS)):
                item.setBackground(col, QBrush(QColor(HIGHLIGHT)) if on else QBrush())
                item.setForeground(col, QBrush(QColor("#111111")) if on else QBrush())
                item.setFont(col, bold if on else self.tree.font())
        item = self.items.get(self.highlighted or "")
        if item is not None:
            self.tree.setCurrentItem(item)
