"""A GPU's processes as a stream reader holds them: rows of atoms, not objects.

At 16 GPUs x 1,024 processes nearly every process's figures move every
second, so a reader that held one ``GpuProcess`` per process made 16k new
objects a frame. Each lived a second, long enough to reach the collector's
oldest generation, and every two frames or so they set off a full
collection over everything the window holds (70-100 ms with the GIL held:
the window's longest stalls). A row here is an exact tuple of atoms (ints,
floats, strings, None and a tuple of strings), which CPython's collector
stops tracking at its first collection (``untrack_tuples`` in
Modules/gcmodule.c), so a frame's new figures add nothing to the walk of a
full collection nor count towards the next one. A process's description is held
the same way, as a row of its ``ProcessInfo``'s fields (``INFO_FIELDS``):
the same tuple frame to frame while it does not change, so a view can skip
what it made of it by identity (``described_by``).

``ProcessColumns`` is what ``GpuSample.processes`` holds then: a sequence of
``GpuProcess`` like the tuple it replaces, each made (with its ProcessInfo)
when it is read and let go by whoever reads it. A reader that looks at every
process of every frame should take them one at a time (iterate; do not keep a
list of them), and may read what it needs off the rows without making the
processes (``identities``, ``used``, ``described``).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from vramscope.core.samples import GpuProcess, ProcessIdentity, ProcessInfo

# A row: a process's fields but its description, in this order
ROW_FIELDS = ("pid", "used", "kinds", "sm", "has_agent", "mig_uuid", "cpu_percent", "host_memory")
PID, USED, KINDS, SM, HAS_AGENT, MIG_UUID, CPU_PERCENT, HOST_MEMORY = range(len(ROW_FIELDS))
# A description's row: its ProcessInfo's fields, in the dataclass's order
INFO_FIELDS = tuple(f.name for f in dataclasses.fields(ProcessInfo))
INFO_START = INFO_FIELDS.index("start_time")
INFO_USER = INFO_FIELDS.index("user")
# a row's (or a description's row's) fields are read by their position above, which a
# type checker cannot follow: each is the type its dataclass field declares
Row = tuple[Any, ...]

_new, _put = object.__new__, object.__setattr__
_info_fields = operator.attrgetter(*INFO_FIELDS)


def row_of(proc: GpuProcess) -> Row:
    """A process's row (an exact tuple of atoms: see the module's docstring)."""
    return (
        proc.pid,
        proc.used,
        proc.kinds,
        proc.sm,
        proc.has_agent,
        proc.mig_uuid,
        proc.cpu_percent,
        proc.host_memory,
    )


def info_row_of(info: ProcessInfo | None) -> Row | None:
    """A description's row (its fields: atoms, but a container's own value)."""
    return None if info is None else _info_fields(info)


def info_of(row: Row | None) -> ProcessInfo | None:
    """The ProcessInfo a description's row stands for (as its dataclass would make it)."""
    if row is None:
        return None
    info = _new(ProcessInfo)
    for name, value in zip(INFO_FIELDS, row):
        _put(info, name, value)
    return info


def with_figures(
    row: Row, used: int | None, sm: int | None, cpu_percent: float | None, host_memory: int | None
) -> Row:
    """``row`` with new moving figures (what a stream delta's ``u`` changes)."""
    return (row[PID], used, row[KINDS], sm, row[HAS_AGENT], row[MIG_UUID], cpu_percent, host_memory)


def process_of(row: Row, info: Row | None) -> GpuProcess:
    """The GpuProcess a row and its description's row stand for (as its dataclass
    would make it, without its __init__: 16k of them a frame on a big box)."""
    proc = _new(GpuProcess)
    pid, used, kinds, sm, has_agent, mig_uuid, cpu_percent, host_memory = row
    _put(proc, "pid", pid)
    _put(proc, "used", used)
    _put(proc, "kinds", kinds)
    _put(proc, "sm", sm)
    _put(proc, "info", info_of(info))
    _put(proc, "has_agent", has_agent)
    _put(proc, "mig_uuid", mig_uuid)
    _put(proc, "cpu_percent", cpu_percent)
    _put(proc, "host_memory", host_memory)
    _put(proc, "_identity", _identity(row, info))
    return proc


def _identity(row: Row, info: Row | None) -> ProcessIdentity:
    return (row[PID], info[INFO_START] if info is not None else None)


def identities(processes: Sequence[GpuProcess]) -> Iterable[ProcessIdentity]:
    """Each process's identity, in order, without making the processes of ProcessColumns."""
    if type(processes) is ProcessColumns:
        return map(_identity, processes.rows, processes.infos)
    return (p.identity for p in processes)


def users(processes: Sequence[GpuProcess]) -> Iterable[str | None]:
    """Each process's user (None: not known from here), in order."""
    if type(processes) is ProcessColumns:
        return map(_user, processes.infos)
    return (None if p.info is None else p.info.user for p in processes)


def _user(info: Row | None) -> str | None:
    return None if info is None else info[INFO_USER]


def info_values(processes: Sequence[GpuProcess], name: str) -> Iterable[object]:
    """Each process's ProcessInfo field ``name`` (None without a description), in order."""
    if type(processes) is ProcessColumns:
        at = INFO_FIELDS.index(name)
        return (None if info is None else info[at] for info in processes.infos)
    return (None if p.info is None else getattr(p.info, name) for p in processes)


def described(processes: Sequence[GpuProcess]) -> Iterable[bool]:
    """Whether each process has a description (a ProcessInfo), in order."""
    if type(processes) is ProcessColumns:
        return (info is not None for info in processes.infos)
    return (p.info is not None for p in processes)


def used(processes: Sequence[GpuProcess]) -> Iterable[int | None]:
    """Each process's device memory, in order."""
    if type(processes) is ProcessColumns:
        return map(operator.itemgetter(USED), processes.rows)
    return (p.used for p in processes)


def described_by(processes: Sequence[GpuProcess]) -> Iterable[tuple[object, ...]]:
    """Per process, in order, what a view keeps what it made of a process by,
    without making the processes of ProcessColumns: (identity, has_agent,
    kinds, mig_uuid, value key, description key). The value key is the same
    object for as long as the process's fields but its description do not
    change (its row, or the GpuProcess itself in a tuple of processes whose
    source keeps them); the description key, for as long as its description
    does not (its description's row, or its ProcessInfo)."""
    if type(processes) is ProcessColumns:
        return map(_described_by, processes.rows, processes.infos)
    return ((p.identity, p.has_agent, p.kinds, p.mig_uuid, p, p.info) for p in processes)


def _described_by(row: Row, info: Row | None) -> tuple[object, ...]:
    return (_identity(row, info), row[HAS_AGENT], row[KINDS], row[MIG_UUID], row, info)


def moving_figures(processes: Sequence[GpuProcess]) -> Iterable[tuple[object, ...]]:
    """Per process, in order, (used, sm, cpu_percent, host_memory, identity),
    without making the processes of ProcessColumns."""
    if type(processes) is ProcessColumns:
        return map(_moving, processes.rows, processes.infos)
    return ((p.used, p.sm, p.cpu_percent, p.host_memory, p.identity) for p in processes)


def _moving(row: Row, info: Row | None) -> tuple[object, ...]:
    return (row[USED], row[SM], row[CPU_PERCENT], row[HOST_MEMORY], _identity(row, info))


class ProcessColumns(Sequence[GpuProcess]):
    """A GPU's processes: ``rows`` (exact tuples of atoms, ``ROW_FIELDS``) and
    ``infos`` (each row's description as a row, ``INFO_FIELDS``, or None),
    read as GpuProcess values.

    The stream reader gives the same ``infos`` object frame to frame while no process
    comes, goes, moves or changes its description (core/stream/delta_reader.py): whoever
    works something out of a GPU's processes' identities and descriptions may keep it
    for as long as ``infos`` is that object (the store's slots, the pipeline's labels).

    Equal to the tuple of the same processes, and hashed as it is."""

    __slots__ = ("rows", "infos")

    def __init__(self, rows: tuple[Row, ...], infos: tuple[Row | None, ...]) -> None:
        if len(rows) != len(infos):
            raise ValueError(f"{len(rows)} rows for {len(infos)} descriptions")
        self.rows = rows
        self.infos = infos

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> GpuProcess: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[GpuProcess, ...]: ...
    def __getitem__(self, index: int | slice) -> GpuProcess | tuple[GpuProcess, ...]:
        if isinstance(index, slice):
            return tuple(map(process_of, self.rows[index], self.infos[index]))
        return process_of(self.rows[index], self.infos[index])

    def __iter__(self) -> Iterator[GpuProcess]:
        return map(process_of, self.rows, self.infos)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ProcessColumns):
            return self.rows == other.rows and self.infos == other.infos
        if isinstance(other, tuple):
            return len(other) == len(self.rows) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ProcessColumns({len(self.rows)} processes)"
