"""The process table's model: the rows of a ``TableRows`` (core/processes/process_rows.py),
already filtered and sorted off the GUI thread.

The model sorts in Python (``sort``: a header click re-arranges the rows it
holds), not through a QSortFilterProxyModel: a proxy calls back into Python
for every comparison and every cell it filters, which on a busy machine
(thousands of processes) held the GUI thread for seconds per frame. What the
view asks for (``data``) is only the cells in view.

What the view draws of a row (its ``RowLooks``: every role of every cell) is
made once per row per frame, when the row is in view, and ``data`` only looks
it up: Qt's item delegate asks seven roles of each cell it paints. A new frame
signals the cells in view that look different from what the same place showed
before -- the same process or, after a re-sort, another one -- and nothing
else: no layout change while the row count stays, so the view repaints those
cells, once (the table re-selects its process by key after a re-sort).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont

from vramscope.core.store.held_rows import HeldRows
from vramscope.core.processes.process_rows import (
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
from vramscope.ui.qt import pens, theme
from vramscope.core.status.terminal_text import visible
from vramscope.ui.qt.safe_text import tip

__all__ = ["AGENT_MARK", "COL", "COLUMNS", "KEY_ROLE", "SPARK_ROLE", "STYLE_ROLE", "ProcessTableModel"]

KEY_ROLE = Qt.ItemDataRole.UserRole + 2
SPARK_ROLE = Qt.ItemDataRole.UserRole + 3  # the Growth cell's sparkline values (bytes)
STYLE_ROLE = Qt.ItemDataRole.UserRole + 4  # the process's (colour, dash) in the plots
DISPLAY = Qt.ItemDataRole.DisplayRole
TOOLTIP = Qt.ItemDataRole.ToolTipRole

_EMPTY = TableRows(rows=(), order=TableOrder(), used_columns=frozenset(), user_totals=())
_N = len(COLUMNS)
_ALIGNS = tuple(
    int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter) if c.numeric else None for c in COLUMNS
)
_PID, _NAME, _AGENT, _USER, _MEMORY, _GROWTH, _COMMAND = (
    COL[n] for n in ("PID", "Name", "Agent", "User", "Memory", "Growth", "Command")
)


class RowLooks(NamedTuple):
    """One row as the view draws it."""

    row: tuple  # the held row (an exact tuple, core/store/held_rows.py) it was made from
    cells: tuple  # per column (text, colour role, bold, swatch or sparkline): compared between frames
    roles: dict  # role -> per column, what ``data`` answers


def _colour_roles(row: ProcessRow) -> list:
    """Per column, the theme role its text is drawn in (None: the view's own)."""
    out: list = [None] * _N
    if row.visibility != VISIBLE:
        out[_USER] = out[_COMMAND] = "WARNING"
    if row.used is None:
        out[_MEMORY] = "MUTED"
    if row.has_agent:
        out[_AGENT] = "OK"
    if row.growth is not None and row.growth >= GROWTH_WARN:
        out[_GROWTH] = "WARNING"
    if row.alert:
        out[_NAME] = "WARNING"
    return out


class ProcessTableModel(QAbstractTableModel):
    order_changed = Signal(object)  # the TableOrder after a header click, a filter, grouping

    def __init__(self, colours: pens.ColourBook, parent=None):
        super().__init__(parent)
        self.colours = colours
        self.order = TableOrder()
        self.table = _EMPTY
        self._rows: HeldRows = _EMPTY.rows
        self._looks: dict[int, RowLooks] = {}  # display row -> what the view draws of it
        # (first, last) display rows the view shows now; (0, -1) when none (a hidden tab)
        self.in_view: Callable[[], tuple[int, int]] = lambda: (0, len(self._rows) - 1)
        self._bold = QFont()
        self._bold.setBold(True)
        self._colours: dict[str, QColor] = {}  # theme role -> its colour in today's scheme

    @property
    def rows(self) -> HeldRows:
        """The rows (ProcessRow) in the order shown."""
        return self._rows

    def show(self, table: TableRows) -> None:
        """Show a built table (rows in display order)."""
        if table.order != self.order:  # the order changed while it was being built
            table = TableBuilder.rearrange(
                table.source, self.order, table.user_totals, owners=table.owner_totals
            )
        old = self._rows
        self.table, rows = table, table.rows
        if len(rows) != len(old) or not rows:
            self.beginResetModel()
            self._rows = rows
            self._looks.clear()
            self.endResetModel()
            return
        self._rows = rows
        self._changed_cells(rows.raw, old.raw)

    def _changed_cells(self, rows, old) -> None:
        """Signal the cells of ``rows`` in view that look different from what ``old``
        showed in the same places, a column's run of rows at a time: the view
        repaints those cells only (an Age ticking each second repaints one narrow
        column, not the table; a re-sort, the cells whose text moved). Rows out of
        view are read when they scroll in; a range reaching far past the view made
        Qt repaint it all."""
        first, last = self.in_view()
        changed: dict[int, list[int]] = {}
        for i in range(max(0, first), min(last + 1, len(rows))):
            before = self._looks_of(i, old[i]).cells  # (the cache holds old[i]'s until now)
            now = self._looks_of(i, rows[i]).cells
            if now != before:
                for c in range(_N):
                    if now[c] != before[c]:
                        changed.setdefault(c, []).append(i)
        for c, at in changed.items():
            start = at[0]
            for prev, after in zip(at, at[1:] + [-1]):
                if after != prev + 1:  # the end of a run of rows
                    self.dataChanged.emit(self.index(start, c), self.index(prev, c))
                    start = after

    def restyle(self) -> None:
        """The theme changed: colours are looked up again when the view repaints."""
        self._colours.clear()
        self._looks.clear()

    def set_order(self, order: TableOrder) -> None:
        if order == self.order:
            return
        self.order = order
        self.show(self.table)
        self.order_changed.emit(order)

    def _looks_of(self, i: int, raw: tuple) -> RowLooks:
        """Display row ``i`` (holding ``raw``, a held row) as the view draws it, made
        once per row per frame."""
        held = self._looks.get(i)
        if held is not None and held.row is raw:
            return held
        row = tuple.__new__(ProcessRow, raw)
        texts = tuple(visible(c.text(row)) for c in COLUMNS)
        colours = _colour_roles(row)
        style = self.colours.style(row.identity)
        bold = row.has_agent
        cells = tuple(
            (
                texts[c],
                colours[c],
                bold and c == _AGENT,
                style if c == _PID else row.spark if c == _GROWTH else None,
            )
            for c in range(_N)
        )
        fonts, styles, sparks = [None] * _N, [None] * _N, [None] * _N
        if bold:
            fonts[_AGENT] = self._bold
        styles[_PID], sparks[_GROWTH] = style, row.spark
        roles = {
            DISPLAY: texts,
            Qt.ItemDataRole.ForegroundRole: tuple(None if r is None else self._colour(r) for r in colours),
            Qt.ItemDataRole.FontRole: tuple(fonts),
            Qt.ItemDataRole.TextAlignmentRole: _ALIGNS,
            KEY_ROLE: (row.key,) * _N,
            STYLE_ROLE: tuple(styles),
            SPARK_ROLE: tuple(sparks),
        }
        held = self._looks[i] = RowLooks(raw, cells, roles)
        return held

    def _colour(self, role: str) -> QColor:
        colour = self._colours.get(role)
        if colour is None:
            colour = self._colours[role] = QColor(getattr(theme, role))
        return colour

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

    def headerData(self, section, orientation, role=DISPLAY):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == DISPLAY:
            return COLUMNS[section].name
        if role == TOOLTIP:
            return COLUMNS[section].tip
        return None

    def data(self, index: QModelIndex, role=DISPLAY):
        if not index.isValid():
            return None
        r = index.row()
        values = self._looks_of(r, self._rows.raw[r]).roles.get(role)
        if values is not None:
            return values[index.column()]
        if role == TOOLTIP:
            return _tooltip(self._rows[r], COLUMNS[index.column()])
        return None


def _tooltip(row: ProcessRow, column) -> str | None:
    """A cell's tooltip (asked only when hovered)."""
    col = column.name
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
