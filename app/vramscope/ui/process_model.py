"""The process table's model: the rows of a ``TableRows`` (core/process_rows.py),
already filtered and sorted off the GUI thread.

The model sorts in Python (``sort``: a header click re-arranges the rows it
holds), not through a QSortFilterProxyModel: a proxy calls back into Python
for every comparison and every cell it filters, which on a busy machine
(thousands of processes) held the GUI thread for seconds per frame. What the
view asks for (``data``) is only the cells in view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont

from vramscope.core.process_rows import (
    AGENT_MARK,
    COL,
    COLUMNS,
    GROWTH_WARN,
    ProcessRow,
    TableBuilder,
    TableOrder,
    TableRows,
)
from vramscope.core.samples import ACCESS_DENIED, VISIBLE
from vramscope.ui import theme
from vramscope.core.terminal_text import visible
from vramscope.ui.safe_text import tip

__all__ = ["AGENT_MARK", "COL", "COLUMNS", "KEY_ROLE", "SPARK_ROLE", "STYLE_ROLE", "ProcessTableModel"]

KEY_ROLE = Qt.ItemDataRole.UserRole + 2
SPARK_ROLE = Qt.ItemDataRole.UserRole + 3  # the Growth cell's sparkline values (bytes)
STYLE_ROLE = Qt.ItemDataRole.UserRole + 4  # the process's (colour, dash) in the plots

_EMPTY = TableRows(rows=(), order=TableOrder(), used_columns=frozenset(), user_totals=())


def _growth_looks(row: ProcessRow) -> tuple:
    """What the Growth cell shows besides its text: the sparkline and the warning colour."""
    return row.spark, row.growth is not None and row.growth >= GROWTH_WARN


class ProcessTableModel(QAbstractTableModel):
    order_changed = Signal(object)  # the TableOrder after a header click, a filter, grouping

    def __init__(self, colours: theme.ColourBook, parent=None):
        super().__init__(parent)
        self.colours = colours
        self.order = TableOrder()
        self.table = _EMPTY
        self._rows: tuple[ProcessRow, ...] = ()
        self._texts: dict[int, tuple] = {}  # display row -> (its ProcessRow, its cells' texts)
        # (first, last) display rows the view shows now; (0, -1) when none (a hidden tab)
        self.in_view: Callable[[], tuple[int, int]] = lambda: (0, len(self._rows) - 1)
        self._bold = QFont()
        self._bold.setBold(True)

    @property
    def rows(self) -> list[ProcessRow]:
        """The rows in the order shown."""
        return list(self._rows)

    def show(self, table: TableRows) -> None:
        """Show a built table (rows in display order)."""
        if table.order != self.order:  # the order changed while it was being built
            table = TableBuilder.rearrange(table.source, self.order, table.user_totals)
        old = self._rows
        self.table, rows = table, table.rows
        if len(rows) != len(old) or not rows:
            self.beginResetModel()
            self._rows = rows
            self._texts.clear()
            self.endResetModel()
            return
        if all(a.key == b.key for a, b in zip(rows, old)):
            self._rows = rows
            self._changed_cells(rows, old)  # repaint only the cells that read differently
            return
        # the same number of rows, some moved: keep selection and scroll
        self.layoutAboutToBeChanged.emit()
        keep = self.persistentIndexList()
        self._rows = rows
        self.changePersistentIndexList(keep, [self._moved(i, old, table) for i in keep])
        self.layoutChanged.emit()
        self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))

    def _changed_cells(self, rows, old) -> None:
        """Signal the cells of ``rows`` in view that look different from ``old``
        (same keys, same places), a column's run of rows at a time: the view
        repaints those cells only (an Age ticking each second repaints one
        narrow column, not the table). Rows out of view are read when they
        scroll in; a range reaching far past the view made Qt repaint it all."""
        first, last = self.in_view()
        every = range(len(COLUMNS))
        growth = COL["Growth"]
        changed: dict[int, list[int]] = {}
        for i in range(max(0, first), min(last + 1, len(rows))):
            a, b = rows[i], old[i]
            before = self._cells(i, b)  # (the cache holds b's texts until now)
            now = self._cells(i, a)
            if a.visibility != b.visibility:  # it colours several columns
                columns = every
            else:
                spark = _growth_looks(a) != _growth_looks(b)
                columns = [c for c in every if now[c] != before[c] or (spark and c == growth)]
            for c in columns:
                changed.setdefault(c, []).append(i)
        for c, at in changed.items():
            start = at[0]
            for prev, after in zip(at, at[1:] + [-1]):
                if after != prev + 1:  # the end of a run of rows
                    self.dataChanged.emit(self.index(start, c), self.index(prev, c))
                    start = after

    def _moved(self, index: QModelIndex, old, table: TableRows) -> QModelIndex:
        row = table.row_of.get(old[index.row()].key) if index.row() < len(old) else None
        return QModelIndex() if row is None else self.index(row, index.column())

    def set_order(self, order: TableOrder) -> None:
        if order == self.order:
            return
        self.order = order
        self.show(self.table)
        self.order_changed.emit(order)

    def _cells(self, i: int, row: ProcessRow) -> tuple[str, ...]:
        """Display row ``i``'s texts, made once per row per frame (the view asks often)."""
        cached = self._texts.get(i)
        if cached is None or cached[0] is not row:
            cached = self._texts[i] = (row, tuple(visible(c.text(row)) for c in COLUMNS))
        return cached[1]

    # -- Qt ------------------------------------------------------------------------
    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        """A header click: re-arrange the rows held now (the next frames follow)."""
        self.set_order(
            replace(self.order, column=COLUMNS[column].name, descending=order == Qt.SortOrder.DescendingOrder)
        )

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section].name
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section].tip
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        r = index.row()
        row = self._rows[r]
        column = COLUMNS[index.column()]
        col = column.name
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cells(r, row)[index.column()]
        if role == KEY_ROLE:
            return row.key
        if role == STYLE_ROLE and col == "PID":
            return self.colours.style(row.identity)
        if role == SPARK_ROLE and col == "Growth":
            return row.spark
        if role == Qt.ItemDataRole.TextAlignmentRole and column.numeric:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole:
            if row.visibility != VISIBLE and col in ("User", "Command"):
                return QColor(theme.WARNING)
            if col == "Memory" and row.used is None:
                return QColor(theme.MUTED)
            if col == "Agent" and row.has_agent:
                return QColor(theme.OK)
            if col == "Growth" and row.growth is not None and row.growth >= GROWTH_WARN:
                return QColor(theme.WARNING)
            if col == "Name" and row.alert:
                return QColor(theme.WARNING)
        if role == Qt.ItemDataRole.FontRole and col == "Agent" and row.has_agent:
            return self._bold
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == "Command":
                return tip(visible(row.command))  # another user's argv: as written, never HTML
            if col == "Memory" and row.used is None and row.visibility == ACCESS_DENIED:
                return (
                    "Another user's process: its figures (DRM fdinfo) are not readable "
                    "without privileges: n/a (access denied), not 0."
                )
            if col == "Name" and row.alert:
                return tip(visible(row.alert))
            if col == "Name" and row.members:
                return (
                    f"{row.members} processes of one user, parent and command line "
                    f"({'click to fold them' if row.opened else 'click to list them'})"
                )
            if col == "Memory" and row.used is None:
                return "The driver gives no per-process figure here (e.g. Windows/WSL, MIG): n/a, not 0."
            if col == "SM %" and row.mig and row.sm is None:
                return "NVML gives no per-process SM % on a MIG slice: n/a, not 0."
            if col == "SM %" and row.sm is None:
                return (
                    "No per-process busy figure here: n/a, not 0 (a driver without process "
                    "utilisation; ROCm compute on an AMD card, whose queues fdinfo does not "
                    "time; a process just seen)."
                )
            if col == "Agent" and row.has_agent:
                return "Runs the vramscope PyTorch agent: allocator breakdown available."
            return column.tip
        return None
