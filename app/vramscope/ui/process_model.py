"""The process table's model: one row per (GPU, process) of the latest frame.

Rows are plain values built from a Frame (no Qt in ``rows_from_frame``);
the model shows them and sorts on raw values (``SORT_ROLE``), so memory
sorts by bytes and "n/a" sorts below every figure.

The columns are the one list ``COLUMNS``: adding a column is one ``Column``
entry there (its header, how a row reads, how it sorts, its width and tip).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QColor, QFont

from vramscope.core.containers import container_text
from vramscope.core.growth import growth_per_minute, sparkline
from vramscope.core.samples import VISIBLE, Frame, ProcessIdentity
from vramscope.core.store import proc_key
from vramscope.core.units import NA, fmt_duration, fmt_gib
from vramscope.ui import theme
from vramscope.core.process_names import process_label
from vramscope.core.process_text import command_text, user_text

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
KEY_ROLE = Qt.ItemDataRole.UserRole + 2
SPARK_ROLE = Qt.ItemDataRole.UserRole + 3  # the Growth cell's sparkline values (bytes)
STYLE_ROLE = Qt.ItemDataRole.UserRole + 4  # the process's (colour, dash) in the plots


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
    cpu: float | None = None  # host CPU %, 100 = one core
    host_memory: int | None = None  # bytes
    growth: float | None = None  # MiB per minute over the last minutes
    spark: tuple[float, ...] = ()  # device memory over the same minutes (bytes)
    container: str = ""  # 'docker trainer (pid 1 inside)'; '' outside containers
    host: str | None = None  # the machine, when not this one
    host_gpu: int | None = None  # the GPU's index on that machine
    mig: str = ""  # the MIG slice's profile ("3g.40gb"); '' off MIG


def rows_from_frame(frame: Frame | None, store=None) -> list[ProcessRow]:
    """The table's rows; with ``store``, growth and its sparkline from the history."""
    if frame is None:
        return []
    agent_ids = {getattr(a, "identity", None) for a in frame.agents}
    rows = []
    for gpu, proc in frame.all_processes():
        info = proc.info
        ident = proc.identity
        start = info.start_time if info is not None else None
        key = proc_key(gpu.index, ident.pid, ident.start_time)
        growth, spark = None, ()
        if store is not None:
            t, v = store.series(key, frame.time - 310.0)
            growth, spark = growth_per_minute(t, v, frame.time), sparkline(t, v, frame.time)
        rows.append(ProcessRow(
            key=key,
            gpu=gpu.index, pid=proc.pid, identity=ident, label=process_label(proc),
            user=user_text(proc), used=proc.used, sm=proc.sm,
            age=None if start is None else max(0.0, frame.time - start),
            command=command_text(proc),
            visibility=info.visibility if info is not None else "unknown",
            has_agent=proc.has_agent or ident in agent_ids,
            kinds=proc.kinds, cpu=proc.cpu_percent, host_memory=proc.host_memory,
            growth=growth, spark=spark, host=gpu.host, host_gpu=gpu.host_index,
            container=container_text(info),
            mig=_slice_text(gpu, proc),
        ))
    return rows


def _slice_text(gpu, proc) -> str:
    mig = gpu.slice_of(proc)
    return "" if mig is None else (mig.profile or "MIG")


AGENT_MARK = "●"


def _number(value) -> float:
    """Floats for every number (one QVariant type, so Qt compares them as numbers:
    Python ints past 2**31 and small ones would become different variant types);
    -1e30 for n/a, so it sorts below every figure (growth can be negative)."""
    return -1e30 if value is None else float(value)


def growth_text(mib_per_min: float | None) -> str:
    if mib_per_min is None:
        return NA
    if abs(mib_per_min) < 0.05:
        return "0"
    digits = 0 if abs(mib_per_min) >= 10 else 1
    return f"{mib_per_min:+.{digits}f} MiB/min"


@dataclass(frozen=True)
class Column:
    name: str  # the header, and the key for COL / remembered column choices
    text: Callable[[ProcessRow], str]
    sort: Callable[[ProcessRow], float | str] | None = None  # None: the text, lower case
    width: int = 80
    tip: str | None = None
    numeric: bool = False  # right-aligned
    shown: bool = True  # shown until the user says otherwise
    when_used: bool = False  # shown only while some row has a value (not in the column menu)


COLUMNS: tuple[Column, ...] = (
    # "Host" (another machine's rows: --host, a fleet) is shown first and only when used
    Column("Host", lambda r: r.host or "", None, 110, when_used=True),
    Column("GPU", lambda r: str(r.gpu if r.host_gpu is None else r.host_gpu),
           lambda r: float(r.gpu), 40, numeric=True),
    # "MIG" (the slice a process runs on) is shown only when some GPU is in MIG mode
    Column("MIG", lambda r: r.mig, None, 72, when_used=True,
           tip="The MIG slice (profile) the process runs on: its memory is the slice's."),
    Column("PID", lambda r: str(r.pid), lambda r: float(r.pid), 92, numeric=True,
           tip="The swatch is the process's colour and line style in the plots."),
    Column("Agent", lambda r: AGENT_MARK if r.has_agent else "",
           lambda r: 1.0 if r.has_agent else 0.0, 50,
           tip="Processes running the vramscope PyTorch agent."),
    Column("User", lambda r: r.user, None, 96),
    Column("Memory", lambda r: fmt_gib(r.used, 2), lambda r: _number(r.used), 84, numeric=True,
           tip="Device memory NVML reports for the process, in GiB (2^30 bytes). n/a: not reported."),
    Column("Growth", lambda r: growth_text(r.growth), lambda r: _number(r.growth), 150, numeric=True,
           tip="How fast its device memory grew over the last 5 minutes (MiB per minute, "
               "median of pairwise slopes), with the curve of those minutes."),
    Column("SM %", lambda r: NA if r.sm is None else f"{r.sm}", lambda r: _number(r.sm), 52,
           numeric=True,
           tip="Share of the time the GPU's SMs ran this process's kernels (NVML process utilisation)."),
    Column("CPU %", lambda r: NA if r.cpu is None else f"{r.cpu:.0f}", lambda r: _number(r.cpu), 56,
           numeric=True, tip="Host CPU use since the previous sample; 100 = one core."),
    Column("Host mem", lambda r: fmt_gib(r.host_memory, 1), lambda r: _number(r.host_memory), 76,
           numeric=True, tip="Resident host memory (RSS) of the process, in GiB."),
    Column("Age", lambda r: fmt_duration(r.age), lambda r: _number(r.age), 84, numeric=True,
           tip="Time since the process started."),
    # shown while some process runs in a container
    Column("Container", lambda r: r.container, None, 210, when_used=True,
           tip="The container the process runs in (from its cgroup) and its PID inside it."),
    Column("Command", lambda r: r.command, None, 200),
)
COLUMN_NAMES = tuple(c.name for c in COLUMNS)
COL = {c.name: i for i, c in enumerate(COLUMNS)}


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
            return COLUMNS[section].name
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section].tip
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        column = COLUMNS[index.column()]
        col = column.name
        if role == Qt.ItemDataRole.DisplayRole:
            return column.text(row)
        if role == SORT_ROLE:
            return column.sort(row) if column.sort is not None else column.text(row).lower()
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
        if role == Qt.ItemDataRole.FontRole and col == "Agent" and row.has_agent:
            return self._bold
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == "Command":
                return row.command
            if col == "Memory" and row.used is None:
                return "The driver gives no per-process figure here (e.g. Windows/WSL, MIG): n/a, not 0."
            if col == "SM %" and row.mig and row.sm is None:
                return "NVML gives no per-process SM % on a MIG slice: n/a, not 0."
            if col == "Agent" and row.has_agent:
                return "Runs the vramscope PyTorch agent: allocator breakdown available."
            return column.tip
        return None


GROWTH_WARN = 10.0  # MiB/min from which the growth figure is drawn in the warning colour


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
