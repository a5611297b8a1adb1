"""The reader's side of the stream's deltas (core/stream/deltas.py: the format
and the writer): whole frames and deltas in, Frames out.

The reader keeps the values of the frame it holds and builds only what a
delta changes: a steady process costs nothing, a changed one one checked
build (the codec's schema check, core/stream/codec.py), a process whose
moving figures alone changed is rebuilt from the one held
(``GpuProcess.with_figures``) with its columns checked at C speed.
"""

from __future__ import annotations

import dataclasses
import math
import operator

from vramscope.core.samples import Frame, GpuProcess, GpuSample
from vramscope.core.stream import codec, flat_processes, protocol
from vramscope.core.stream.agent_deltas import AGENTS, AgentsHeld
from vramscope.core.stream.deltas import GPUS, PATCHED, PROCESSES, TIME, from_wire_key, process_key


class _Held:
    """The reader's view of one GPU: its processes by key, in the frame's order
    (a dict keeps it: the gone are popped, the new appended, a patched one keeps
    its place), and the GpuSample last built (reused whole while nothing of it
    changes)."""

    __slots__ = ("objects", "gpu")

    def __init__(self, objects: dict, gpu: GpuSample | None):
        self.objects = objects
        self.gpu = gpu


def _shared(gpu: GpuSample, held: _Held) -> GpuSample:
    """A whole frame's GPU with the values held for what did not change: the same
    process object when equal, the held description with the new figures when
    only those moved (so the views keep what they made of it)."""
    objects = held.objects
    processes = tuple(_same(objects.get(_key_of(p)), p) for p in gpu.processes)
    if (
        held.gpu is not None
        and processes == held.gpu.processes
        and gpu == dataclasses.replace(held.gpu, processes=gpu.processes)
    ):
        return held.gpu
    return dataclasses.replace(gpu, processes=processes)


def _same(old: GpuProcess | None, new: GpuProcess) -> GpuProcess:
    if old is None:
        return new
    if old == new:
        return old
    if old.info == new.info and (old.pid, old.kinds, old.has_agent, old.mig_uuid) == (
        new.pid,
        new.kinds,
        new.has_agent,
        new.mig_uuid,
    ):
        return old.with_figures(new.used, new.sm, new.cpu_percent, new.host_memory)
    return new


def _key_of(proc: GpuProcess):
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

    def __init__(self, version: int = protocol.STREAM_VERSION):
        self.version = version
        self._agents = AgentsHeld()
        self._whole = codec.FrameDecoder()
        self._seq = None  # the seq of the frame held; None: wait for a whole frame
        self._top: dict = {}
        self._gpus: dict = {}  # index -> _Held
        self._order: list = []
        self._alerts: list = []
        self._info_cache: dict = {}  # the codec's reuse table for ProcessInfo across deltas
        self.refused = 0

    def whole(self, message: dict) -> tuple[Frame, list]:
        """A ``frame`` message (any version): the frame; ValueError if it does not fit."""
        data = message.get("frame")
        frame = flat_processes.read_frame(self._whole, data, self.version, self._info_cache)
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
            held = self._gpus.get(gpu.index)
            if held is not None:
                gpu = _shared(gpu, held)
            objects = {_key_of(p): p for p in gpu.processes}
            if gpu.index in gpus or len(objects) != len(gpu.processes):
                self._gpus = {}
                return frame, alerts  # a GPU or a process twice: not diffable, no delta follows
            gpus[gpu.index] = _Held(objects, gpu)
        frame = dataclasses.replace(frame, gpus=tuple(h.gpu for h in gpus.values()))
        self._top = {k: v for k, v in data.items() if k not in (GPUS, TIME, self._apart)}
        self._agents = AgentsHeld(frame.agents)
        self._gpus, self._order = gpus, list(gpus)
        self._alerts = alerts
        self._seq = seq
        return frame, alerts

    def delta(self, message: dict) -> tuple[Frame, list]:
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

    def _apply(self, message: dict) -> tuple[Frame, list]:
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
                held = gpus[index] = _Held({}, None)
            self._gpu(held, entry)
        order = message.get("go", self._order)
        if type(order) is not list or any(type(i) is not int or i not in gpus for i in order):
            raise ValueError("go names a GPU not held")
        if "go" in message:  # the GPUs it leaves out are gone
            self._gpus = gpus = {i: gpus[i] for i in order}
        if len(order) != len(gpus):
            raise ValueError("a GPU came or went without go, or go names one twice")
        frame = codec.from_wire(Frame, {**top, TIME: message.get(TIME)})
        parts = {"gpus": tuple(gpus[i].gpu for i in order)}
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

    def _gpu(self, held: _Held, entry: dict) -> None:
        if type(entry) is not dict:
            raise TypeError("a GPU's delta must be an object")
        if held.gpu is None and "gpu" not in entry:
            raise ValueError("a new GPU without its fields")
        objects = held.objects
        moved = False
        for key in _list(entry.get("x", [])):
            moved |= objects.pop(from_wire_key(key), None) is not None
        if "p" in entry:
            codec._REUSE.previous = codec._REUSE.current = self._info_cache
            try:
                for p in _list(entry["p"]):
                    if type(p) is not dict:
                        raise TypeError("a process must be an object")
                    objects[process_key(p)] = flat_processes.read_process(p, self.version, self._info_cache)
            finally:
                codec._REUSE.previous = codec._REUSE.current = None
            moved = True
        if "u" in entry:
            for key, proc in _patched(objects, entry["u"]):
                objects[key] = proc
            moved = True
        if "o" in entry:
            order = [from_wire_key(k) for k in _list(entry["o"])]
            held.objects = {k: objects[k] for k in order}  # KeyError: a process not held
            if len(held.objects) != len(objects):
                raise ValueError("the order does not name the processes held")
            objects, moved = held.objects, True
        if "gpu" in entry:
            wire = entry["gpu"]
            if type(wire) is not dict or PROCESSES in wire:
                raise TypeError("a GPU's fields must be an object without processes")
            processes = held.gpu.processes if held.gpu is not None and not moved else tuple(objects.values())
            held.gpu = dataclasses.replace(codec.from_wire(GpuSample, wire), processes=processes)
        elif moved:
            held.gpu = dataclasses.replace(held.gpu, processes=tuple(objects.values()))
        if len(self._info_cache) > 4 * max(len(objects), 1024) * max(len(self._gpus), 1):
            self._info_cache.clear()


def _patched(objects: dict, patch) -> list:
    """(key, GpuProcess) for each process of a ``u`` patch, rebuilt with its new figures."""
    if type(patch) is not dict:
        raise TypeError("u must be an object")
    keys = _list(patch.get("k"))
    if not _TYPES[int] >= set(map(type, keys)):  # a MIG slice's [pid, uuid] among them
        keys = list(map(from_wire_key, keys))
    olds = list(map(objects.__getitem__, keys))  # KeyError: a process not held
    columns = []
    for name, check in PATCHED.items():
        values = patch.get(name)
        if values is None:
            columns.append(map(operator.attrgetter(name), olds))
            continue
        if len(_list(values)) != len(keys):
            raise ValueError(f"u.{name} has {len(values)} values for {len(keys)} processes")
        columns.append(_checked(values, check))
    return list(zip(keys, map(GpuProcess.with_figures, olds, *columns)))


_TYPES = {int: frozenset((int,)), float: frozenset((int, float))}
_NULLABLE = {kind: types | {type(None)} for kind, types in _TYPES.items()}


def _checked(values: list, check) -> list:
    """A column of a ``u`` patch checked as the codec checks one value (``check``),
    at C speed for a column of plain numbers (the 16k processes of a big box)."""
    kind = int if check is codec._as_int else float
    seen = set(map(type, values))
    if not seen <= _NULLABLE[kind]:
        return [None if v is None else check(v) for v in values]  # raises for the one that does not fit
    known = values if type(None) not in seen else [v for v in values if v is not None]
    if known:
        low, high = min(known), max(known)
        if kind is int and not -codec.LIMIT_INT < low <= high < codec.LIMIT_INT:
            raise TypeError(f"expected an integer within int64, got {low} .. {high}")
        if kind is float and (
            not -codec.LIMIT_FLOAT <= low <= high <= codec.LIMIT_FLOAT or not all(map(math.isfinite, known))
        ):
            raise TypeError("expected finite numbers")
    if kind is float and int in seen:
        return [v if v is None else float(v) for v in values]
    return values


def _list(value) -> list:
    if type(value) is not list or len(value) > codec.MAX_ITEMS:
        raise TypeError("expected a list")
    return value


def _alerts(value) -> list:
    if type(value) is not list:
        return []
    return [codec.plain_json(a) for a in value if isinstance(a, dict)]
