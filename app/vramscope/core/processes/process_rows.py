"""The process table's rows, Qt-free: one row per (GPU, process) of a frame
(made in core/processes/frame_rows.py), the columns that read them, and the table as
shown (filtered and sorted).

Everything here is plain Python so the window can build a busy machine's
table (16 GPUs x 1,024 processes) on a worker thread and hand the GUI thread
a finished ``TableRows`` to show: the GUI thread then does O(rows in view)
work, never O(processes).

The columns are the one list ``COLUMNS``: adding a column is one ``Column``
entry there (its header, how a row reads, how it sorts, its width and tip).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from vramscope.core.processes.cell_texts import BUSIEST, growth_text, host_memory_text, sm_text
from vramscope.core.processes.frame_rows import FIELD, ProcessRow, rows_from_frame
from vramscope.core.processes.growth import GrowthCache
from vramscope.core.store.held_rows import HeldRows, exact
from vramscope.core.processes.process_groups import group_name, is_group, units
from vramscope.core.processes.row_texts import RowTemplates
from vramscope.core.samples import Frame
from vramscope.core.units import NA, fmt_duration, fmt_gib
from vramscope.core.processes.scheduler_totals import OwnerTotal, job_totals, pod_totals
from vramscope.core.processes.user_totals import UserTotal, user_totals

AGENT_MARK = "●"
ALERT_MARK = "⚠"  # before the Name of a process with an active alert (the alert in its tooltip)
OPEN_MARK, CLOSED_MARK = "▾", "▸"  # before a group's Name: its processes shown / folded
MEMBER_INDENT = "    "
GROWTH_WARN = 10.0  # MiB/min from which the growth figure is drawn in the warning colour

_KEY, _PID, _START, _KIN, _OPENED, _ALERT, _INSIDE = (
    FIELD[name] for name in ("key", "pid", "start_time", "kin", "opened", "alert", "inside")
)


def _number(value) -> float:
    """A float for every number; -1e30 for n/a, so it sorts below every figure
    (growth can be negative)."""
    return -1e30 if value is None else float(value)


def name_text(row: ProcessRow) -> str:
    """The Name cell: a mark for a group (folded or open) or an alerted process."""
    if row.members:
        return f"{OPEN_MARK if row.opened else CLOSED_MARK} {group_name((None, (row.name,)), row.members)}"
    mark = f"{ALERT_MARK} " if row.alert else ""
    return (MEMBER_INDENT if row.opened else "") + mark + row.name


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

    def sort_key(self, row: ProcessRow):
        return self.sort(row) if self.sort is not None else self.text(row).lower()


COLUMNS: tuple[Column, ...] = (
    # "Host" (another machine's rows: --host, a fleet) is shown first and only when used
    Column("Host", lambda r: r.host or "", None, 110, when_used=True),
    Column(
        "GPU",
        lambda r: r.gpus or str(r.gpu if r.host_gpu is None else r.host_gpu),
        lambda r: float(r.gpu),
        40,
        numeric=True,
    ),
    # "MIG" (the slice a process runs on) is shown only when some GPU is in MIG mode
    Column(
        "MIG",
        lambda r: r.mig,
        None,
        72,
        when_used=True,
        tip="The MIG slice (profile) the process runs on: its memory is the slice's.",
    ),
    Column(
        "PID",
        lambda r: "" if r.members else str(r.pid),
        lambda r: float(r.pid),
        92,
        numeric=True,
        tip="The swatch is the process's colour and line style in the plots.",
    ),
    Column(
        "Name",
        name_text,
        None,
        200,
        tip="What the process is: its script or module, the model it serves, its container. "
        f"{CLOSED_MARK} a group of processes that belong together (same user, parent and "
        f"command line): click to list them. {ALERT_MARK} an active alert (hover for it).",
    ),
    Column(
        "Agent",
        lambda r: AGENT_MARK if r.has_agent else "",
        lambda r: 1.0 if r.has_agent else 0.0,
        50,
        tip="Processes running the vramscope PyTorch agent.",
    ),
    Column("User", lambda r: r.user, None, 96),
    Column(
        "Memory",
        lambda r: fmt_gib(r.used, 2),
        lambda r: _number(r.used),
        84,
        numeric=True,
        tip=(
            "GPU memory the driver reports for the process (NVML; DRM fdinfo or ROCm's KFD on AMD "
            "and Intel; on a unified-memory GPU its buffers in system memory), in GiB (2^30 bytes). "
            "n/a: not reported."
        ),
    ),
    Column(
        "Growth",
        lambda r: growth_text(r.growth),
        lambda r: _number(r.growth),
        150,
        numeric=True,
        tip="How fast its device memory grew over the last 5 minutes (MiB per minute, "
        "median of pairwise slopes), with the curve of those minutes.",
    ),
    Column(
        "SM %",
        sm_text,
        lambda r: _number(r.sm),
        60,
        numeric=True,
        tip="Share of the time the GPU's SMs ran this process's kernels (NVML process utilisation). "
        f"A group's row: its busiest process's ({BUSIEST} 55), not a sum.",
    ),
    Column(
        "CPU %",
        lambda r: NA if r.cpu is None else f"{r.cpu:.0f}",
        lambda r: _number(r.cpu),
        56,
        numeric=True,
        tip="Host CPU use since the previous sample; 100 = one core.",
    ),
    Column(
        "Host mem",
        lambda r: host_memory_text(r.host_memory),
        lambda r: _number(r.host_memory),
        76,
        numeric=True,
        tip="Resident host memory (RSS) of the process: GiB, MiB under 0.1 GiB.",
    ),
    Column(
        "Age",
        lambda r: fmt_duration(r.age),
        lambda r: _number(r.age),
        84,
        numeric=True,
        tip="Time since the process started.",
    ),
    # shown while some process runs in a container or a Slurm job
    Column(
        "Container",
        lambda r: r.container,
        None,
        210,
        when_used=True,
        tip="The container the process runs in (from its cgroup) and its PID inside it; a "
        "Kubernetes pod as namespace/pod · container; a Slurm job as id · user · name.",
    ),
    Column("Command", lambda r: r.command, None, 200),
)
COL = {c.name: i for i, c in enumerate(COLUMNS)}


@dataclass(frozen=True)
class TableOrder:
    """How the table shows its rows: the sort column and direction, users kept
    together, and a filter (rows whose any column contains it, any case)."""

    column: str = "Memory"
    descending: bool = True
    group_by_user: bool = False
    filter: str = ""
    opened: frozenset = frozenset()  # the group keys whose processes are listed


def arrange(rows, order: TableOrder) -> list[ProcessRow]:
    """``rows`` filtered and sorted as ``order`` says (a stable sort: equal rows
    keep the frame's order; with ``group_by_user`` users stay A..Z whichever
    way the column sorts). Processes that belong together are one row (its
    figures their sums), sorted as one, and listed under it when opened."""
    return [_view(row) for row in _arranged(list(exact(rows)), order)]


def _view(row: tuple) -> ProcessRow:
    """A held row (an exact tuple) read as a ProcessRow, for as long as it is used."""
    return tuple.__new__(ProcessRow, row)


def _arranged(rows: list[tuple], order: TableOrder) -> list[tuple]:
    """arrange, of held rows (exact tuples: each read as a ProcessRow one at a time)."""
    if order.filter:
        needle = order.filter.lower()
        rows = [r for r in rows if _contains(_view(r), needle)]
    top, inside = _fold(rows, order.opened)
    out = _sorted(top, order)
    if not inside:
        return out
    listed = []
    for row in out:
        listed.append(row)
        if row[_OPENED]:
            listed += _sorted(inside[row[_KEY]], order)
    return listed


def _contains(row: ProcessRow, needle: str) -> bool:
    return any(needle in c.text(row).lower() for c in COLUMNS)


_KIN_OF = operator.itemgetter(_KIN)


def _sorted(rows: list[tuple], order: TableOrder) -> list[tuple]:
    column = COLUMNS[COL.get(order.column, COL["Memory"])]
    key = column.sort or column.sort_key
    out = sorted(rows, key=lambda r: key(_view(r)), reverse=order.descending)
    if order.group_by_user:
        user = COLUMNS[COL["User"]]
        out.sort(key=lambda r: user.sort_key(_view(r)))
    return out


def _fold(rows: list[tuple], opened) -> tuple[list[tuple], dict]:
    """(one row per group or lone process, in the frame's order; an opened
    group's key -> its processes' rows)."""
    if not any(map(_KIN_OF, rows)):
        return rows, {}  # nothing that could group (a group needs a known parent and command)
    found = units(((r[_KEY], r[_KIN]) for r in rows), {r[_KEY] for r in rows if r[_ALERT]}, ())
    if all(not is_group(u) for u in found):
        return rows, {}
    by_key = {r[_KEY]: r for r in rows}
    top, inside = [], {}
    for unit, keys in found.items():
        if not is_group(unit):
            top.append(by_key[keys[0]])
            continue
        members = [_view(by_key[k]) for k in keys]
        is_open = unit in opened
        top.append(tuple(_group_row(unit, members, is_open)))
        if is_open:
            inside[unit] = [tuple(r._replace(opened=True)) for r in members]
    return top, inside


@dataclass(frozen=True)
class TableRows:
    """A frame's table, ready to show: rows in display order and what goes around them.
    The rows are held as exact tuples (core/store/held_rows.py) and read as ProcessRow."""

    rows: HeldRows
    order: TableOrder
    used_columns: frozenset[str]  # the when_used columns some row has a value in
    user_totals: tuple[UserTotal, ...]
    source: HeldRows = ()  # type: ignore[assignment]  # every row, in the frame's order (before the filter)
    row_of: dict = field(default_factory=dict)  # store key -> display row
    owner_totals: tuple[
        OwnerTotal, ...
    ] = ()  # per Slurm job, then per pod (core/processes/scheduler_totals.py)

    def __post_init__(self) -> None:
        for name in ("rows", "source"):
            value = getattr(self, name)
            if not isinstance(value, HeldRows):
                object.__setattr__(self, name, HeldRows(exact(value), ProcessRow))


class TableBuilder:
    """Builds ``TableRows`` from frames; safe to call from one worker thread at
    a time (the growth cache lives here, one per table)."""

    def __init__(self):
        self.growth = GrowthCache()
        self.templates = RowTemplates()
        self.alerts: dict = {}  # process identity -> its active alerts' text (set by the window)
        self._lock = threading.Lock()

    def build(self, frame: Frame | None, store, order: TableOrder) -> TableRows:
        with self._lock:
            rows = rows_from_frame(frame, store, self.growth, self.templates)
        owners = (*job_totals(frame), *pod_totals(frame))
        return self.rearrange(
            rows, order, user_totals(frame) if frame is not None else [], self.alerts, owners
        )

    @staticmethod
    def rearrange(rows, order: TableOrder, totals, alerts: dict | None = None, owners=()) -> TableRows:
        """``rows``: ProcessRow, or held rows; ``alerts``: process identity -> the
        text of its active alert(s); ``owners``: per-job and per-pod totals."""
        held = exact(rows)
        if alerts:
            said = alerts.get  # (an identity is the (pid, start time) tuple)
            held = tuple(
                r if (text := said((r[_PID], r[_START]))) is None else r[:_ALERT] + (text,) + r[_ALERT + 1 :]
                for r in held
            )
        shown = tuple(_arranged(list(held), order))
        return TableRows(
            rows=HeldRows(shown, ProcessRow),
            order=order,
            used_columns=_used_columns(held),
            user_totals=tuple(totals),
            source=HeldRows(held, ProcessRow),
            row_of=_row_of(shown),
            owner_totals=tuple(owners),
        )


def _used_columns(rows: tuple) -> frozenset[str]:
    """The when_used columns some row has a value in (each row read once)."""
    unknown = [c for c in COLUMNS if c.when_used]
    used = set()
    for r in rows:
        row = _view(r)
        for c in unknown:
            if c.text(row):
                used.add(c.name)
        if used:
            unknown = [c for c in unknown if c.name not in used]
            if not unknown:
                break
    return frozenset(used)


def _total(values):
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _busiest(values):
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _group_row(unit: tuple, inside: list[ProcessRow], is_open: bool) -> ProcessRow:
    first = min(inside, key=lambda r: r.pid)  # its colour: the lowest pid's, as in the plots
    gpus = sorted({r.gpu if r.host_gpu is None else r.host_gpu for r in inside})
    ages = [r.age for r in inside if r.age is not None]
    return first._replace(
        key=unit,
        name=unit[1][0],
        members=len(inside),
        opened=is_open,
        used=_total(r.used for r in inside),
        sm=_busiest(r.sm for r in inside),  # shares of different GPUs' time: a sum means nothing
        cpu=_total(r.cpu for r in inside),
        host_memory=_total(r.host_memory for r in inside),
        growth=_total(r.growth for r in inside),
        spark=(),
        age=max(ages) if ages else None,
        has_agent=any(r.has_agent for r in inside),
        gpus=", ".join(map(str, gpus)),
        container=_common(r.container for r in inside),  # a Slurm job's, a pod's: said once
        alert="",
        inside=tuple(r.key for r in inside),
    )


def _common(texts) -> str:
    """The text every member has, or ''."""
    found = set(texts)
    return found.pop() if len(found) == 1 else ""


def _row_of(shown: tuple) -> dict:
    """Store key -> display row; a folded group's processes -> the group's row."""
    out = {}
    for i, row in enumerate(shown):
        out[row[_KEY]] = i
        for key in row[_INSIDE]:
            out.setdefault(key, i)
    return out
