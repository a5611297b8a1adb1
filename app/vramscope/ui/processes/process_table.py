"""The process table view: sortable, one selected process at a time.

The selection is kept as the process's store key, so it survives the
model being rebuilt every tick and the rows moving when they re-sort.
Compact rows (a busy machine's sixteen processes fit at 1400 x 900); the PID
cell carries the process's swatch -- its colour and line style in the plots --
and the Growth cell a sparkline of the last minutes. Right-click the header to
choose the columns (``columns_changed`` tells the window, which remembers them).
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QItemSelectionModel, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QSizePolicy,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.processes.process_rows import (
    COL,
    COLUMNS,
    ProcessRow,
    TableBuilder,
    TableRows,
)
from vramscope.core.samples import gpu_label
from vramscope.core.stream.first_look import is_pending
from vramscope.core.status.terminal_text import visible
from vramscope.core.units import fmt_gib
from vramscope.core.processes.owner_labels import POD, SLURM_JOB
from vramscope.core.processes.user_totals import UserTotal
from vramscope.ui.qt import pens, theme
from vramscope.ui.window.bridge import BUSY_PROCESSES, Bridge, LatestOnly
from vramscope.ui.processes.process_model import KEY_ROLE, SPARK_ROLE, STYLE_ROLE, ProcessTableModel
from vramscope.ui.processes.processes_pending import PendingNote
from vramscope.ui.qt.safe_text import plain, tip

ROW_HEIGHT = 20
USERS_SHOWN = 6  # "Memory by user": the biggest users named, the rest in the tooltip
SWATCH_WIDTH = 22
SPARK_WIDTH = 54
# A busy frame's table is built this long after the frame came, once its plots
# are drawn (one timeline per event-loop turn, then painted: ~50-100 ms at
# 16 GPUs x 1,024 processes). The build is ~100 ms of Python on the worker, and
# while it runs every step of the GUI thread that needs the GIL waits for the
# worker's turn to end (up to sys.getswitchinterval(), 5 ms): plots drawn beside
# it took 50-170 ms instead of 30 (bench/window_scale.py).
AFTER_PLOTS_MS = 150


class SwatchDelegate(QStyledItemDelegate):
    """The PID cell: a short line and fill in the process's plot style, then the PID."""

    def paint(self, painter: QPainter, option, index) -> None:
        style = index.data(STYLE_ROLE)
        super().paint(painter, option, index)
        if not style:
            return
        colour, dash = style
        r = option.rect
        box = QRectF(r.left() + 4, r.top() + 4, SWATCH_WIDTH - 6, r.height() - 8)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(box, pens.brush(colour, dash, alpha=150))
        pen = QPen(QColor(colour), 2.0)
        pen.setStyle(pens.DASHES[dash % len(pens.DASHES)])
        painter.setPen(pen)
        painter.drawLine(QPointF(box.left(), box.top()), QPointF(box.right(), box.top()))
        painter.restore()


class SparkDelegate(QStyledItemDelegate):
    """The Growth cell: the text on the right, the last minutes' curve on the left."""

    def paint(self, painter: QPainter, option, index) -> None:
        super().paint(painter, option, index)
        values = index.data(SPARK_ROLE) or ()
        if len(values) < 2:
            return
        r = option.rect
        lo, hi = min(values), max(values)
        span = hi - lo
        w, h = min(SPARK_WIDTH, r.width() // 2), r.height() - 6
        x0, y0 = r.left() + 4, r.top() + 3
        path = QPainterPath()
        for i, v in enumerate(values):
            y = y0 + h / 2 if span <= 0 else y0 + h - (v - lo) / span * h
            x = x0 + i * w / (len(values) - 1)
            if i == 0:
                path.moveTo(x, y)
            else:
                path.lineTo(x, y)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(theme.PLOT_FOREGROUND), 1.2))
        painter.drawPath(path)
        painter.restore()


class ProcessTable(QWidget):
    selection_changed = Signal(object)  # the selected row's store key, or None
    end_requested = Signal(object)  # a ProcessRow the user asked to end (context menu)
    columns_changed = Signal(object)  # the names of the hidden columns (a tuple)
    shown = Signal()  # a table built on the worker is on screen

    def __init__(self, colours: pens.ColourBook, parent=None):
        super().__init__(parent)
        self.model = ProcessTableModel(colours, self)
        self.builder = TableBuilder()
        self._bridge = Bridge(self)
        self.worker = LatestOnly(self._bridge, "vramscope-table")
        self._due: tuple | None = None  # (frame, store) of a busy frame waiting for its plots
        self._after_plots = QTimer(self)
        self._after_plots.setSingleShot(True)
        self._after_plots.setInterval(AFTER_PLOTS_MS)
        self._after_plots.timeout.connect(self._build_due)
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
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._column_menu)
        theme.styled(
            self.view,
            lambda s: (
                "QTableView { border: none; gridline-color: transparent; }"
                "QTableView::item { padding: 0px 4px; }"
                "QHeaderView::section { padding: 2px 6px; border: none;"
                f" border-bottom: 1px solid {s.CARD_BORDER}; background: {s.CARD_BACKGROUND}; }}"
            ),
        )
        self.set_hidden_columns(tuple(c.name for c in COLUMNS if not c.shown))
        for i, column in enumerate(COLUMNS):
            if column.when_used:
                self.view.setColumnHidden(i, True)
        self.group_by_user = QCheckBox("Group by user")
        self.group_by_user.setToolTip("Keep each user's processes together; totals per user beside it.")
        self.group_by_user.toggled.connect(
            lambda on: self.model.set_order(replace(self.model.order, group_by_user=on))
        )
        self.users = plain(QLabel())  # user names are strangers' text
        self.users.setObjectName("userTotals")
        theme.styled(self.users, lambda s: f"color: {s.MUTED};")
        self.users.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # a shared box's long list is cut at the table's edge, never widening the window
        self.users.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 4, 0)
        bar.addWidget(self.group_by_user)
        bar.addWidget(self.users, 1)
        self.holders = QLabel()  # /dev/nvidia* open without being on NVML's lists
        self.holders.setObjectName("deviceHolders")
        theme.styled(self.holders, lambda s: f"color: {s.WARNING}; padding: 0 4px;")
        self.holders.setWordWrap(True)
        self.holders.hide()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(bar)
        lay.addWidget(self.view)
        lay.addWidget(self.holders)
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

    # -- columns ------------------------------------------------------------------------
    def hidden_columns(self) -> tuple[str, ...]:
        return tuple(c.name for i, c in enumerate(COLUMNS) if not c.when_used and self.view.isColumnHidden(i))

    def set_hidden_columns(self, names) -> None:
        """Hide the named columns, show the others (unknown names are ignored)."""
        names = set(names)
        for i, column in enumerate(COLUMNS):
            if column.when_used:
                continue  # its rows decide (set_rows)
            hide = column.name in names and column.name != "PID"  # the PID column always stays
            self.view.setColumnHidden(i, hide)

    def _column_menu(self, pos) -> None:
        menu = QMenu(self)
        for i, column in enumerate(COLUMNS):
            if column.name == "PID" or column.when_used:
                continue
            act = menu.addAction(column.name)
            act.setCheckable(True)
            act.setChecked(not self.view.isColumnHidden(i))
            act.toggled.connect(lambda on, i=i: self._toggle_column(i, on))
        menu.popup(self.view.horizontalHeader().mapToGlobal(pos))
        self.column_menu = menu

    def _toggle_column(self, i: int, shown: bool) -> None:
        self.view.setColumnHidden(i, not shown)
        self.columns_changed.emit(self.hidden_columns())

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
        from PySide6.QtWidgets import QMenu

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
        """The frame's processes (with ``store``: their growth), and memory per user.
        The table is built on a worker thread, whatever the machine, and shown
        when ready (a newer frame replaces one still waiting); a busy frame's
        (BUSY_PROCESSES or more) once its plots are drawn (AFTER_PLOTS_MS)."""
        if frame is not None and sum(len(g.processes) for g in frame.gpus) >= BUSY_PROCESSES:
            self._due = (frame, store)
            if not self._after_plots.isActive():  # (not restarted: fast sampling still shows tables)
                self._after_plots.start()
            return
        self._due = None
        self._after_plots.stop()
        self._build(frame, store)

    def _build_due(self) -> None:
        if self._due is not None:
            due, self._due = self._due, None
            self._build(*due)

    def _build(self, frame, store) -> None:
        order = self.model.order
        self.worker.submit(
            lambda: (self.builder.build(frame, store, order), frame), lambda built: self.show_table(*built)
        )

    def settle(self, timeout: float = 10.0) -> None:
        """Until the table asked for is built and shown (tests, benches; never the app)."""
        from PySide6.QtCore import QCoreApplication, QEvent

        self._after_plots.stop()
        self._build_due()
        self.worker.wait_idle(timeout)
        QCoreApplication.sendPostedEvents(self._bridge, QEvent.Type.MetaCall)  # its show_table

    def set_filter(self, text: str) -> None:
        """Rows whose any column contains ``text`` (any case); empty shows all."""
        self.model.set_order(replace(self.model.order, filter=text))

    def show_table(self, table: TableRows, frame=None) -> None:
        self.set_user_totals(
            list(table.user_totals),
            {g.index: g.label for g in frame.gpus} if frame is not None else None,
            table.owner_totals,
        )
        self.pending.follow(is_pending(frame))
        holders = frame.device_holders if frame is not None else ()
        self.holders.setVisible(bool(holders))
        if holders:
            self.holders.setText(
                "Holding /dev/nvidia* without being listed by the driver: "
                + "; ".join(
                    f"pid {h.info.pid} {h.info.user or ''} ({h.info.command or 'command n/a'})"
                    for h in holders
                )
            )
        for i, column in enumerate(COLUMNS):
            if column.when_used:
                used = column.name in table.used_columns
                if self.view.isColumnHidden(i) == used:
                    self.view.setColumnHidden(i, not used)
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

    def set_user_totals(self, totals: list[UserTotal], gpu_labels: dict | None = None, owners=()) -> None:
        """``gpu_labels``: index -> "GPU 0" / "lab2 GPU 0", as the cards name them;
        ``owners``: per-Slurm-job and per-pod totals (core/processes/scheduler_totals.py), a line each kind."""
        lines, hidden = [], []
        for title, kind, of in (
            ("user", "users", totals),
            ("Slurm job", "jobs", [t for t in owners if t.kind == SLURM_JOB]),
            ("pod", "pods", [t for t in owners if t.kind == POD]),
        ):
            parts = [_user_text(t, gpu_labels or {}) for t in of]  # the biggest first
            if not parts:
                continue
            shown = "   ·   ".join(parts[:USERS_SHOWN])
            if len(parts) > USERS_SHOWN:
                shown += f"   ·   + {len(parts) - USERS_SHOWN} more {kind} (hover for all)"
                hidden.extend(parts)
            lines.append(f"Memory by {title}:  {shown}")
        plain(self.users).setText("\n".join(map(visible, lines)))  # each line escaped: one line each
        self.users.setToolTip(tip("\n".join(hidden)) if hidden else "")

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


def _user_text(total, gpu_labels: dict) -> str:
    """'alice 14.20 GiB (GPU 0: 12.00, GPU 1: 2.20)' (a UserTotal or a job's or pod's OwnerTotal)."""
    text = f"{total.label} {fmt_gib(total.used, 2)}"
    name = {g: gpu_labels.get(g) or gpu_label(g) for g, _b in total.per_gpu}
    if len(total.per_gpu) > 1:
        text += " (" + ", ".join(f"{name[g]}: {b / (1 << 30):.2f}" for g, b in total.per_gpu) + ")"
    elif total.per_gpu:
        text += f" on {name[total.per_gpu[0][0]]}"
    return text
