"""The process table view: sortable, one selected process at a time.

The selection is kept as the process's store key, so it survives the
model being rebuilt every tick and the rows moving when they re-sort.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QHBoxLayout, QHeaderView, QLabel, QTableView, QVBoxLayout,
    QWidget,
)

from vramscope.core.units import fmt_gib
from vramscope.core.user_totals import UserTotal, user_totals
from vramscope.ui import theme
from vramscope.ui.process_model import (
    COL, KEY_ROLE, ProcessRow, ProcessSortProxy, ProcessTableModel, rows_from_frame,
)


class ProcessTable(QWidget):
    selection_changed = Signal(object)  # the selected row's store key, or None
    end_requested = Signal(object)  # a ProcessRow the user asked to end (context menu)

    def __init__(self, colours: theme.ColourBook, parent=None):
        super().__init__(parent)
        self.model = ProcessTableModel(colours, self)
        self.proxy = ProcessSortProxy(self)
        self.proxy.setSourceModel(self.model)
        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(COL["Memory"], Qt.SortOrder.DescendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setAlternatingRowColors(True)
        self.view.setShowGrid(False)
        self.view.setWordWrap(False)
        self.view.verticalHeader().hide()
        self.view.verticalHeader().setDefaultSectionSize(26)
        header = self.view.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for name, width in (("GPU", 48), ("PID", 92), ("Agent", 72), ("User", 130),
                            ("Memory", 96), ("SM %", 60), ("Age", 96), ("Container", 210)):
            self.view.setColumnWidth(COL[name], width)
        header.moveSection(header.visualIndex(COL["Host"]), 0)  # shown first, when shown
        self.view.setColumnHidden(COL["Host"], True)
        self.view.setStyleSheet(
            "QTableView { border: none; gridline-color: transparent; }"
            "QHeaderView::section { padding: 4px 6px; border: none;"
            f" border-bottom: 1px solid {theme.CARD_BORDER}; background: {theme.CARD_BACKGROUND}; }}")
        self.group_by_user = QCheckBox("Group by user")
        self.group_by_user.setToolTip("Keep each user's processes together; totals per user beside it.")
        self.group_by_user.toggled.connect(self.proxy.set_group_by_user)
        self.users = QLabel()
        self.users.setObjectName("userTotals")
        self.users.setStyleSheet(f"color: {theme.MUTED};")
        self.users.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 4, 0)
        bar.addWidget(self.group_by_user)
        bar.addWidget(self.users, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(bar)
        lay.addWidget(self.view)
        self._selected: tuple | None = None
        self._rebuilding = False
        self.view.selectionModel().selectionChanged.connect(self._on_selection)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)

    @property
    def selected_key(self) -> tuple | None:
        return self._selected

    def selected_row(self) -> ProcessRow | None:
        for row in self.model.rows:
            if row.key == self._selected:
                return row
        return None

    def _context_menu(self, pos) -> None:
        from PySide6.QtWidgets import QMenu

        index = self.view.indexAt(pos)
        if not index.isValid():
            return
        self.select_key(index.data(KEY_ROLE))
        row = self.selected_row()
        if row is None:
            return
        menu = QMenu(self)
        menu.addAction(f"End process {row.pid}\u2026", lambda: self.end_requested.emit(row))
        menu.popup(self.view.viewport().mapToGlobal(pos))
        self.context_menu = menu

    def show_frame(self, frame) -> None:
        """The frame's processes, and memory per user over the machine."""
        self.set_rows(rows_from_frame(frame))
        self.set_user_totals(user_totals(frame))

    def set_user_totals(self, totals: list[UserTotal]) -> None:
        text = "   ·   ".join(_user_text(t) for t in totals)
        self.users.setText(f"Memory by user:  {text}" if text else "")

    def set_rows(self, rows: list[ProcessRow]) -> None:
        remote = any(r.host is not None for r in rows)
        if self.view.isColumnHidden(COL["Host"]) == remote:
            self.view.setColumnHidden(COL["Host"], not remote)
        self._rebuilding = True
        try:
            self.model.set_rows(rows)
            if self._selected is not None and self._row_of(self._selected) is None:
                self._selected = None
                gone = True
            else:
                gone = False
                if self._selected is not None:
                    self._reselect(self._selected)
        finally:
            self._rebuilding = False
        if gone:
            self.selection_changed.emit(None)

    def select_key(self, key: tuple | None) -> None:
        if key is None:
            self.view.clearSelection()
        else:
            self._reselect(key)

    def visible_rows(self) -> list[int]:
        """PIDs in the order the table shows them (after sorting)."""
        col = COL["PID"]
        return [int(self.proxy.index(r, col).data()) for r in range(self.proxy.rowCount())]

    def proxy_row_of(self, key: tuple) -> int | None:
        return self._row_of(key)

    def _row_of(self, key: tuple) -> int | None:
        for r in range(self.proxy.rowCount()):
            if self.proxy.index(r, 0).data(KEY_ROLE) == key:
                return r
        return None

    def _reselect(self, key: tuple) -> None:
        r = self._row_of(key)
        if r is None:
            return
        sel = self.view.selectionModel()
        current = sel.selectedRows()
        if len(current) == 1 and current[0].row() == r:
            return
        sel.select(self.proxy.index(r, 0),
                   QItemSelectionModel.SelectionFlag.ClearAndSelect
                   | QItemSelectionModel.SelectionFlag.Rows)

    def _on_selection(self, *_):
        if self._rebuilding:
            return
        rows = self.view.selectionModel().selectedRows()
        key = rows[0].data(KEY_ROLE) if rows else None
        if key != self._selected:
            self._selected = key
            self.selection_changed.emit(key)


def _user_text(total: UserTotal) -> str:
    """'alice 14.20 GiB (GPU 0: 12.00, GPU 1: 2.20)'."""
    text = f"{total.label} {fmt_gib(total.used, 2)}"
    if len(total.per_gpu) > 1:
        text += " (" + ", ".join(f"GPU {g}: {b / (1 << 30):.2f}" for g, b in total.per_gpu) + ")"
    elif total.per_gpu:
        text += f" on GPU {total.per_gpu[0][0]}"
    return text
