"""The reader's side of the stream's deltas (core/stream/deltas.py: the format
and the writer): whole frames and deltas in, Frames out.

The reader keeps the values of the frame it holds and builds only what a
delta changes: a steady process costs nothing, a changed one one checked
build (the codec's schema check, core/stream/codec.py), a process whose
moving figures alone changed gets a new row (core/processes/process_columns.py: the
processes are held as rows of atoms, which the garbage collector does not
track) with its columns checked at C speed.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import typing
from collections.abc import Iterable
from typing import Any

from vramscope.core.processes.process_columns import (
    ROW_FIELDS,
    ProcessColumns,
    Row,
    info_row_of,
    row_of,
    with_figures,
)
from vramscope.core.samples import Frame, GpuProcess, GpuSample
from vramscope.core.stream import codec, flat_processes, json_checks, protocol
from vramscope.core.stream.agent_deltas import AGENTS, AgentsHeld
from vramscope.core.stream.deltas import PATCHED, from_wire_key, process_key
from vramscope.core.stream.protocol import GPUS, PROCESSES, TIME, Wire


class _Held:
    """The reader's view of one GPU: its processes' rows and their descriptions'
    rows by key (core/processes/process_columns.py: rows of atoms, which the garbage
    collector does not track; each the same object while it does not change),
    in the frame's order (dicts keep it: the gone are popped, the new
    appended, a patched one keeps its place), and the GpuSample last built
    (reused whole while nothing of it changes)."""

    __slots__ = ("rows", "infos", "gpu", "_infos")

    def __init__(
        self, rows: dict[object, Row], infos: dict[object, Row | None], gpu: GpuSample | None
    ) -> None:
        self.rows = rows
        self.infos = infos
        self.gpu = gpu
        # infos in order, made again once a process came, went or moved
        self._infos: tuple[Row | None, ...] | None = None

    def put(self, key: object, proc: GpuProcess) -> None:
        """A process new or changed whole (a changed one keeps its place, and its
        description's row when that did not change)."""
        info, infos = info_row_of(proc.info), self.infos
        if key in infos and infos[key] == info:
            info = infos[key]
        else:
            self._infos = None
        self.rows[key] = row_of(proc)
        self.infos[key] = info

    def drop(self, key: object) -> bool:
        self.infos.pop(key, None)
        gone = self.rows.pop(key, None) is not None
        self._infos = None if gone else self._infos
        return gone

    def reorder(self, order: list[object]) -> None:
        rows, infos = self.rows, self.infos
        self.rows = {k: rows[k] for k in order}  # KeyError: a process not held
        if len(self.rows) != len(rows):
            raise ValueError("the order does not name the processes held")
        self.infos = {k: infos[k] for k in order}
        self._infos = None

    def processes(self) -> tuple[GpuProcess, ...]:
        """The processes held, as ``GpuSample.processes`` (an empty GPU's: ``()``)."""
        if not self.rows:
            return ()
        if self._infos is None:
            self._infos = tuple(self.infos.values())
        # a ProcessColumns is no tuple, but stands for the tuple of its processes (a
        # Sequence equal to it and hashed as it: core/processes/process_columns.py), which is the
        # type GpuSample.processes declares for the wire
        return ProcessColumns(tuple(self.rows.values()), self._infos)  # type: ignore[return-value]


def _held_of(processes: Iterable[GpuProcess], was: _Held | None) -> _Held | None:
    """A whole frame's GPU's processes (taken one at a time) as held, sharing with
    what was held each row and description equal to the one held. None: a
    process twice (not diffable)."""
    held = _Held({}, {}, None)
    old_rows, old_infos = (was.rows, was.infos) if was is not None else ({}, {})
    for proc in processes:
        key = _key_of(proc)
        if key in held.rows:
            return None
        row, info = row_of(proc), info_row_of(proc.info)
        old_row, old_info = old_rows.get(key), old_infos.get(key)
        held.rows[key] = old_row if old_row == row else row
        held.infos[key] = old_info if old_info is not None and old_info == info else info
    return held


def _settle(held: _Held, gpu: GpuSample, was: _Held | None) -> None:
    """The GpuSample ``held`` gives: the one held when nothing of it changed (so
    the views keep what they made of it), else ``gpu`` with the held processes."""
    processes = held.processes()
    if (
        was is not None
        and was.gpu is not None
        and processes == was.gpu.processes
        and gpu == dataclasses.replace(was.gpu, processes=gpu.processes)
    ):
        held.gpu = was.gpu
        held._infos = was._infos
    else:
        held.gpu = dataclasses.replace(gpu, processes=processes)


def _key_of(proc: GpuProcess) -> object:
    return proc.pid if proc.mig_uuid is None else (proc.pid, proc.mig_uuid)


class FrameAssembler:
    """The reader's side: whole frames and deltas in, Frames out (with the alerts).

    A frame shares what did not change with the one before it: a GPU none of
    whose fields or processes changed is the same GpuSample object, and a
    process not named in the delta the same GpuProcess object (so whoever
    reads the frames can skip what is ``is``-identical). The state held is
    changed in place: a delta that does not fit drops it, and the reader
    waits for the next whole frame.

    ``version`` is the stream's (its hello's): from version 3 on, a delta's
    agents come apart from its ``top``, changed fields only
    (core/stream/agent_deltas.py)."""

    def __init__(self, version: object = protocol.STREAM_VERSION) -> None:
        self.version = version
        self._agents = AgentsHeld()
        self._whole = codec.FrameDecoder()
        self._seq: int | None = None  # the seq of the frame held; None: wait for a whole frame
        self._top: Wire = {}
        self._gpus: dict[int, _Held] = {}  # index -> _Held
        self._order: list[int] = []
        self._alerts: list[object] = []
        self.refused = 0

    def whole(self, message: Wire) -> tuple[Frame, list[object]]:
        """A ``frame`` message (any version): the frame; ValueError if it does not fit."""
        data = message.get("frame")
        # GPU index -> its processes as held, read straight from a flat wire
        read: dict[int, _Held | None] = {}

        def rows(gpu: GpuSample, wire: object) -> tuple[GpuProcess, ...]:
            # (16k GpuProcess values alive at once would all reach the collector's
            # oldest generation, and set off full collections: read one at a time)
            each = flat_processes.each_process(wire)
            held = _held_of(each, self._gpus.get(gpu.index))
            if held is None or gpu.index in read:
                read[gpu.index] = None  # a process or a GPU twice: the frame as it is
                return flat_processes.processes_from_wire(wire)
            read[gpu.index] = held
            return held.processes()

        frame = flat_processes.read_frame(self._whole, data, self.version, rows)
        alerts = _alerts(message.get("alerts"))
        seq = message.get("seq")
        self._seq = None
        if type(seq) is not int:
            return frame, alerts  # a version 1 stream: no delta follows it
        # deltas follow: this reader shares values from here on, with those it holds
        # (a keyframe gives back the objects of what did not change), not through
        # the decoder's table of the last whole frame's wire (~5 objects a process)
        self._whole.forget()
        gpus = {}
        for gpu in frame.gpus:
            was = self._gpus.get(gpu.index)
            held = read[gpu.index] if gpu.index in read else _held_of(gpu.processes, was)
            if gpu.index in gpus or held is None:
                self._gpus = {}
                return frame, alerts  # a GPU or a process twice: not diffable, no delta follows
            _settle(held, gpu, was)
            gpus[gpu.index] = held
        # (each one's GpuSample set by _settle just above)
        frame = dataclasses.replace(
            frame, gpus=typing.cast(tuple[GpuSample, ...], tuple(h.gpu for h in gpus.values()))
        )
        top = typing.cast(Wire, data)  # (a Frame was read from it: an object)
        self._top = {k: v for k, v in top.items() if k not in (GPUS, TIME, self._apart)}
        self._agents = AgentsHeld(frame.agents)
        self._gpus, self._order = gpus, list(gpus)
        self._alerts = alerts
        self._seq = seq
        return frame, alerts

    def delta(self, message: Wire) -> tuple[Frame, list[object]]:
        """A ``delta`` message applied to the frame held; ValueError when it does
        not follow it or does not fit (the frame held is then dropped)."""
        seq = message.get("seq")
        if self._seq is None or type(seq) is not int or seq != self._seq + 1:
            self._seq = None
            raise ValueError("a delta that does not follow the frame held")
        self._seq = None  # until it applied whole: the state is changed in place
        try:
            frame, alerts = self._apply(message)
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            raise ValueError(f"a delta that does not fit: {str(exc)[:200]}") from None
        self._seq = seq
        return frame, alerts

    def _apply(self, message: Wire) -> tuple[Frame, list[object]]:
        top = message.get("top", self._top)
        if type(top) is not dict or GPUS in top or (self._apart is not None and self._apart in top):
            raise TypeError("top must be an object without gpus (and, from version 3, agents)")
        changes = message.get("g", {})
        if type(changes) is not dict:
            raise TypeError("g must be an object")
        gpus = self._gpus
        for name, entry in changes.items():
            index = int(name)
            held = gpus.get(index)
            if held is None:
                held = gpus[index] = _Held({}, {}, None)
            self._gpu(held, entry)
        order = message.get("go", self._order)
        if type(order) is not list or any(type(i) is not int or i not in gpus for i in order):
            raise ValueError("go names a GPU not held")
        if "go" in message:  # the GPUs it leaves out are gone
            self._gpus = gpus = {i: gpus[i] for i in order}
        if len(order) != len(gpus):
            raise ValueError("a GPU came or went without go, or go names one twice")
        frame = codec.from_wire(Frame, {**top, TIME: message.get(TIME)})
        # (the Frame's fields by name; every GPU held has its GpuSample: a new one without
        # its fields was refused, _gpu)
        parts: dict[str, Any] = {"gpus": tuple(gpus[i].gpu for i in order)}
        if self._apart is not None:
            parts[AGENTS] = self._agents.apply(message["ag"]) if "ag" in message else self._agents.reports
        frame = dataclasses.replace(frame, **parts)
        alerts = _alerts(message["alerts"]) if "alerts" in message else self._alerts
        self._top, self._order, self._alerts = top, list(order), alerts
        return frame, alerts

    @property
    def _apart(self) -> str | None:
        """The field a delta sends apart from its top: the agents from version 3 (None before)."""
        return AGENTS if type(self.version) is int and self.version >= 3 else None

    def _gpu(self, held: _Held, entry: object) -> None:
        if type(entry) is not dict:
            raise TypeError("a GPU's delta must be an object")
        if held.gpu is None and "gpu" not in entry:
            raise ValueError("a new GPU without its fields")
        moved = False
        for key in _list(entry.get("x", [])):
            moved |= held.drop(from_wire_key(key))
        if "p" in entry:
            for p in _list(entry["p"]):
                if type(p) is not dict:
                    raise TypeError("a process must be an object")
                held.put(process_key(p), flat_processes.read_process(p, self.version))
            moved = True
        if "u" in entry:
            rows = held.rows
            keys, patched = _patched(rows, entry["u"])
            for key, row in zip(keys, patched):  # (zip's one pair, reused)
                rows[key] = row
            moved = True
        if "o" in entry:
            held.reorder([from_wire_key(k) for k in _list(entry["o"])])
            moved = True
        if "gpu" in entry:
            wire = entry["gpu"]
            if type(wire) is not dict or PROCESSES in wire:
                raise TypeError("a GPU's fields must be an object without processes")
            processes = held.gpu.processes if held.gpu is not None and not moved else held.processes()
            held.gpu = dataclasses.replace(codec.from_wire(GpuSample, wire), processes=processes)
        elif moved:  # (a GPU held without its GpuSample got its fields in this entry, or was refused above)
            held.gpu = dataclasses.replace(typing.cast(GpuSample, held.gpu), processes=held.processes())


def _patched(rows: dict[object, Row], patch: object) -> tuple[list[object], list[Row]]:
    """The keys of a ``u`` patch's processes and their rows with the new figures.
    (Two lists, not a list of pairs: a pair that zip makes is made before the row
    it holds, so a collection that comes while they are gathered finds the row
    still tracked, keeps the pair tracked and promotes it -- 16k a frame.)"""
    if type(patch) is not dict:
        raise TypeError("u must be an object")
    keys = _list(patch.get("k"))
    if not _TYPES[int] >= set(map(type, keys)):  # a MIG slice's [pid, uuid] among them
        keys = list(map(from_wire_key, keys))
    olds = list(map(rows.__getitem__, keys))  # KeyError: a process not held
    columns: list[Iterable[object]] = []
    for name, check in PATCHED.items():
        values = patch.get(name)
        if values is None:
            columns.append(map(operator.itemgetter(ROW_FIELDS.index(name)), olds))
            continue
        if len(_list(values)) != len(keys):
            raise ValueError(f"u.{name} has {len(values)} values for {len(keys)} processes")
        columns.append(_checked(values, check))
    return keys, list(map(with_figures, olds, *columns))


_TYPES = {int: frozenset((int,)), float: frozenset((int, float))}
_NULLABLE = {kind: types | {type(None)} for kind, types in _TYPES.items()}


def _checked(values: list[object], check: codec.Convert) -> list[object]:
    """A column of a ``u`` patch checked as the codec checks one value (``check``),
    at C speed for a column of plain numbers (the 16k processes of a big box)."""
    kind = int if check is json_checks.as_int else float
    seen = set(map(type, values))
    if not seen <= _NULLABLE[kind]:
        return [None if v is None else check(v) for v in values]  # raises for the one that does not fit
    # (their types checked just above: ints, floats and None; known: the numbers)
    numbers = typing.cast(list[float | None], values)
    known = (
        typing.cast(list[float], values) if type(None) not in seen else [v for v in numbers if v is not None]
    )
    if known:
        low, high = min(known), max(known)
        if kind is int and not -codec.LIMIT_INT < low <= high < codec.LIMIT_INT:
            raise TypeError(f"expected an integer within int64, got {low} .. {high}")
        if kind is float and (
            not -codec.LIMIT_FLOAT <= low <= high <= codec.LIMIT_FLOAT or not all(map(math.isfinite, known))
        ):
            raise TypeError("expected finite numbers")
    if kind is float and int in seen:
        return [v if v is None else float(v) for v in numbers]
    return values


def _list(value: object) -> list[object]:
    if type(value) is not list or len(value) > codec.MAX_ITEMS:
        raise TypeError("expected a list")
    return value


def _alerts(value: object) -> list[object]:
    if type(value) is not list:
        return []
    return [codec.plain_json(a) for a in value if isinstance(a, dict)]
