"""The process table view: sortable, one selected process at a time.

The selection is kept as the process's store key, so it survives the
model being rebuilt every tick and the rows moving when they re-sort.
Compact rows (a busy machine's sixteen processes fit at 1400 x 900); the PID
cell carries the process's swatch -- its colour and line style in the plots --
and the Growth cell a sparkline of the last minutes (ui/processes/table_cells.py).
Right-click the header to choose the columns (ui/processes/table_columns.py;
``columns_changed`` tells the window, which remembers them). The rows are built
on a worker (ui/processes/table_worker.py); memory by user and the device
holders are ui/processes/table_notes.py's lines.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QMenu,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.processes.process_rows import COL, COLUMNS, ProcessRow, TableBuilder, TableRows
from vramscope.core.stream.first_look import is_pending
from vramscope.ui.processes.process_model import KEY_ROLE, ProcessTableModel
from vramscope.ui.monitor.processes_pending import PendingNote
from vramscope.ui.processes.table_cells import SparkDelegate, SwatchDelegate
from vramscope.ui.processes.table_columns import TableColumns
from vramscope.ui.processes.table_notes import TableNotes
from vramscope.ui.processes.table_worker import TableWorker
from vramscope.ui.qt import theme
from vramscope.ui.qt.pens import ColourBook

ROW_HEIGHT = 20


class ProcessTable(QWidget):
    selection_changed = Signal(object)  # the selected row's store key, or None
    end_requested = Signal(object)  # a ProcessRow the user asked to end (context menu)
    columns_changed = Signal(object)  # the names of the hidden columns (a tuple)
    shown = Signal()  # a table built on the worker is on screen

    def __init__(self, colours: ColourBook, parent=None):
        super().__init__(parent)
        self.model = ProcessTableModel(colours, self)
        self.builder = TableBuilder()
        self.builds = TableWorker(self, self.builder, lambda: self.model.order, self.show_table)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(COL["Memory"], Qt.SortOrder.DescendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setAlternatingRowColors(True)
        self.view.setShowGrid(False)
        self.view.setWordWrap(False)
        vertical = self.view.verticalHeader()
        vertical.hide()
        vertical.setMinimumSectionSize(ROW_HEIGHT)
        vertical.setDefaultSectionSize(ROW_HEIGHT)
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header = self.view.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for i, column in enumerate(COLUMNS):
            self.view.setColumnWidth(i, column.width)
        self._swatch = SwatchDelegate(self.view)
        self._spark = SparkDelegate(self.view)
        self.view.setItemDelegateForColumn(COL["PID"], self._swatch)
        self.view.setItemDelegateForColumn(COL["Growth"], self._spark)
        self.columns = TableColumns(self.view, self.columns_changed.emit)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self.columns.open_menu)
        theme.styled(
            self.view,
            lambda s: (
                "QTableView { border: none; gridline-color: transparent; }"
                "QTableView::item { padding: 0px 4px; }"
                "QHeaderView::section { padding: 2px 6px; border: none;"
                f" border-bottom: 1px solid {s.CARD_BORDER}; background: {s.CARD_BACKGROUND}; }}"
            ),
        )
        self.group_by_user = QCheckBox("Group by user")
        self.group_by_user.setToolTip("Keep each user's processes together; totals per user beside it.")
        self.group_by_user.toggled.connect(
            lambda on: self.model.set_order(replace(self.model.order, group_by_user=on))
        )
        self.notes = TableNotes()
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 4, 0)
        bar.addWidget(self.group_by_user)
        bar.addWidget(self.notes.users, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(bar)
        lay.addWidget(self.view)
        lay.addWidget(self.notes.holders)
        self._selected: tuple | None = None
        self._rebuilding = False
        self.view.selectionModel().selectionChanged.connect(self._on_selection)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        # swatches, sparklines and text colours are read when painted: a switch repaints
        theme.follow(self, lambda _s: (self.model.restyle(), self.view.viewport().update()))
        self.model.in_view = self._rows_in_view
        self.pending = PendingNote(self.view)  # while the sampler's first pass reads them
        self.view.clicked.connect(self._clicked)

    def _clicked(self, index) -> None:
        """A click on a group's Name lists its processes under it, or folds them."""
        if index.column() != COL["Name"]:
            return
        rows = self.model.rows
        row = rows[index.row()] if index.row() < len(rows) else None
        if row is None or not row.members:
            return
        opened = set(self.model.order.opened) ^ {row.key}
        self.model.set_order(replace(self.model.order, opened=frozenset(opened)))

    def _rows_in_view(self) -> tuple[int, int]:
        """The first and last display rows the view shows now ((0, -1): none)."""
        if not self.view.isVisible():
            return 0, -1  # a hidden table repaints whole when shown
        top = self.view.rowAt(0)
        if top < 0:
            return 0, -1
        bottom = self.view.rowAt(self.view.viewport().height() - 1)
        return top, self.model.rowCount() - 1 if bottom < 0 else bottom

    def height_for_rows(self, rows: int) -> int:
        """The widget height that shows ``rows`` rows without scrolling."""
        header = self.view.horizontalHeader().sizeHint().height()
        scroll = self.view.horizontalScrollBar().sizeHint().height()
        bar = self.group_by_user.sizeHint().height() + self.layout().spacing()
        return bar + header + rows * ROW_HEIGHT + scroll + 2 * self.view.frameWidth() + 2

    @property
    def selected_key(self) -> tuple | None:
        return self._selected

    def selected_row(self) -> ProcessRow | None:
        i = self._row_of(self._selected) if self._selected is not None else None
        rows = self.model.rows
        if i is None or i >= len(rows):
            return None
        row = rows[i]
        return row if row.key == self._selected else None  # (a folded group's process: none)

    def _context_menu(self, pos) -> None:
        index = self.view.indexAt(pos)
        if not index.isValid():
            return
        self.select_key(index.data(KEY_ROLE))
        row = self.selected_row()
        if row is None or row.members:
            return  # (a group's row: end its processes one by one, listed under it)
        menu = QMenu(self)
        menu.addAction(f"End process {row.pid}\u2026", lambda: self.end_requested.emit(row))
        menu.popup(self.view.viewport().mapToGlobal(pos))
        self.context_menu = menu

    def show_frame(self, frame, store=None) -> None:
        """The frame's processes (with ``store``: their growth), and memory per user,
        once built on the worker (TableWorker.submit)."""
        self.builds.submit(frame, store)

    def settle(self, timeout: float = 10.0) -> None:
        """Until the table asked for is built and shown (tests, benches; never the app)."""
        self.builds.settle(timeout)

    def set_filter(self, text: str) -> None:
        """Rows whose any column contains ``text`` (any case); empty shows all."""
        self.model.set_order(replace(self.model.order, filter=text))

    def show_table(self, table: TableRows, frame=None) -> None:
        self.notes.show_totals(
            list(table.user_totals),
            {g.index: g.label for g in frame.gpus} if frame is not None else None,
            table.owner_totals,
        )
        self.pending.follow(is_pending(frame))
        self.notes.show_holders(frame.device_holders if frame is not None else ())
        self.columns.show_used(table.used_columns)
        self._rebuilding = True
        try:
            self.model.show(table)
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
        self.shown.emit()

    def set_rows(self, rows: list[ProcessRow], totals=()) -> None:
        """Show ``rows`` (any order) as the table's rows."""
        self.show_table(TableBuilder.rearrange(rows, self.model.order, totals))

    def select_key(self, key: tuple | None) -> None:
        if key is None:
            self.view.clearSelection()
        else:
            self._reselect(key)

    def visible_rows(self) -> list[int]:
        """PIDs in the order the table shows them (after sorting)."""
        return [r.pid for r in self.model.rows]

    def display_row_of(self, key: tuple) -> int | None:
        return self._row_of(key)

    def _row_of(self, key: tuple) -> int | None:
        return self.model.table.row_of.get(key)

    def _reselect(self, key: tuple) -> None:
        r = self._row_of(key)
        if r is None:
            return
        sel = self.view.selectionModel()
        current = sel.selectedRows()
        if len(current) == 1 and current[0].row() == r:
            return
        sel.select(
            self.model.index(r, 0),
            QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
        )

    def _on_selection(self, *_):
        if self._rebuilding:
            return
        rows = self.view.selectionModel().selectedRows()
        key = rows[0].data(KEY_ROLE) if rows else None
        if key != self._selected:
            self._selected = key
            self.selection_changed.emit(key)
