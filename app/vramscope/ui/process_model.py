"""The process table's model: one row per (GPU, process) of the latest frame.

Rows are plain values built from a Frame (no Qt in ``rows_from_frame``);
the model shows them and sorts on raw values (``SORT_ROLE``), so memory
sorts by bytes and "n/a" sorts below every figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QColor, QFont

from vramscope.core.containers import container_text
from vramscope.core.samples import VISIBLE, Frame, ProcessIdentity
from vramscope.core.store import proc_key
from vramscope.core.units import NA, fmt_duration, fmt_gib
from vramscope.ui import theme
from vramscope.core.process_names import process_label
from vramscope.core.process_text import command_text, user_text

# "Host" (another machine's rows: --host, a fleet) is shown first and only when used
COLUMNS = ("GPU", "PID", "Agent", "User", "Memory", "SM %", "Age", "Container", "Command", "Host")
COL = {name: i for i, name in enumerate(COLUMNS)}
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
KEY_ROLE = Qt.ItemDataRole.UserRole + 2


@dataclass(frozen=True, slots=True)
class ProcessRow:
    key: tuple  # the store's proc key: ("proc", gpu, pid, start_time, "used")
    gpu: int
    pid: int
    identity: ProcessIdentity
    label: str
    user: str
    used: int | None
    sm: int | None
    age: float | None
    command: str
    visibility: str
    has_agent: bool
    kinds: tuple[str, ...]
    container: str = ""  # 'docker trainer (pid 1 inside)'; '' outside containers
    host: str | None = None  # the machine, when not this one
    host_gpu: int | None = None  # the GPU's index on that machine


def rows_from_frame(frame: Frame | None) -> list[ProcessRow]:
    if frame is None:
        return []
    agent_ids = {getattr(a, "identity", None) for a in frame.agents}
    rows = []
    for gpu, proc in frame.all_processes():
        info = proc.info
        ident = proc.identity
        start = info.start_time if info is not None else None
        rows.append(ProcessRow(
            key=proc_key(gpu.index, ident.pid, ident.start_time),
            gpu=gpu.index, pid=proc.pid, identity=ident, label=process_label(proc),
            user=user_text(proc), used=proc.used, sm=proc.sm,
            age=None if start is None else max(0.0, frame.time - start),
            command=command_text(proc),
            visibility=info.visibility if info is not None else "unknown",
            has_agent=proc.has_agent or ident in agent_ids,
            kinds=proc.kinds, host=gpu.host, host_gpu=gpu.host_index,
            container=container_text(info),
        ))
    return rows


class ProcessTableModel(QAbstractTableModel):
    def __init__(self, colours: theme.ColourBook, parent=None):
        super().__init__(parent)
        self.colours = colours
        self._rows: list[ProcessRow] = []
        self._bold = QFont()
        self._bold.setBold(True)

    @property
    def rows(self) -> list[ProcessRow]:
        return list(self._rows)

    def set_rows(self, rows: list[ProcessRow]) -> None:
        if [r.key for r in rows] == [r.key for r in self._rows]:
            self._rows = list(rows)
            if rows:
                self.dataChanged.emit(self.index(0, 0),
                                      self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return _HEADER_TIPS.get(COLUMNS[section])
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        col = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return _display(row, col)
        if role == SORT_ROLE:
            return _sort_value(row, col)
        if role == KEY_ROLE:
            return row.key
        if role == Qt.ItemDataRole.DecorationRole and col == "PID":
            return QColor(self.colours.colour(row.identity))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in ("GPU", "PID", "Memory", "SM %", "Age"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole:
            if row.visibility != VISIBLE and col in ("User", "Command"):
                return QColor(theme.WARNING)
            if col == "Memory" and row.used is None:
                return QColor(theme.MUTED)
            if col == "Agent" and row.has_agent:
                return QColor(theme.OK)
        if role == Qt.ItemDataRole.FontRole and col == "Agent" and row.has_agent:
            return self._bold
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == "Command":
                return row.command
            if col == "Memory" and row.used is None:
                return "The driver gives no per-process figure here (e.g. Windows/WSL, MIG): n/a, not 0."
            if col == "Agent" and row.has_agent:
                return "Runs the vramscope PyTorch agent: allocator breakdown available."
        return None


def _display(row: ProcessRow, col: str) -> str:
    if col == "GPU":
        return str(row.gpu if row.host_gpu is None else row.host_gpu)
    if col == "Host":
        return row.host or ""
    if col == "PID":
        return str(row.pid)
    if col == "Agent":
        return "● agent" if row.has_agent else ""
    if col == "User":
        return row.user
    if col == "Memory":
        return fmt_gib(row.used, 2)
    if col == "SM %":
        return NA if row.sm is None else f"{row.sm}"
    if col == "Age":
        return fmt_duration(row.age)
    if col == "Command":
        return row.command
    if col == "Container":
        return row.container
    return ""


def _sort_value(row: ProcessRow, col: str):
    """Floats for every number (one QVariant type, so Qt compares them as numbers:
    Python ints past 2**31 and small ones would become different variant types);
    -1 for n/a, so it sorts below every figure."""
    if col in ("Memory", "SM %", "Age"):
        value = {"Memory": row.used, "SM %": row.sm, "Age": row.age}[col]
        return -1.0 if value is None else float(value)
    if col == "GPU":
        return float(row.gpu)
    if col == "PID":
        return float(row.pid)
    if col == "Agent":
        return 1.0 if row.has_agent else 0.0
    return _display(row, col).lower()


_HEADER_TIPS = {
    "Memory": "Device memory NVML reports for the process, in GiB (2^30 bytes). n/a: not reported.",
    "SM %": "Share of the time the GPU's SMs ran this process's kernels (NVML process utilisation).",
    "Agent": "Processes running the vramscope PyTorch agent.",
    "Age": "Time since the process started.",
    "Container": "The container the process runs in (from its cgroup) and its PID inside it.",
}


class ProcessSortProxy(QSortFilterProxyModel):
    """Sorts on raw values; with ``group_by_user`` each user's rows stay together
    (users in name order, the chosen column's order within a user)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.setDynamicSortFilter(True)
        self.group_by_user = False

    def set_group_by_user(self, on: bool) -> None:
        self.group_by_user = bool(on)
        self.invalidate()

    def lessThan(self, left: QModelIndex, right: QModelIndex) -> bool:
        if self.group_by_user:
            model = self.sourceModel()
            a = model.index(left.row(), COL["User"]).data(SORT_ROLE)
            b = model.index(right.row(), COL["User"]).data(SORT_ROLE)
            if a != b:
                # the group order stays A..Z whichever way the column sorts
                ascending = self.sortOrder() == Qt.SortOrder.AscendingOrder
                return (a < b) if ascending else (a > b)
        return super().lessThan(left, right)
