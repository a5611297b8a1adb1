"""What changed since the previous frame: the stream's ``delta`` messages
(protocol version 2).

A busy machine's frame is large (16 GPUs x 1,024 processes: ~2 MB of JSON)
and mostly the same as the one before it. The writer (``FrameDiffer``) sends
a whole frame first and every ``KEYFRAME_EVERY`` frames (ten times fewer for a
frame of over ``BIG_FRAME`` processes), and in between
only what differs from the previous one: the frame's own fields when any
changed, and per GPU its own fields when changed, the processes that are
new or changed (whole), the keys of those gone, and the order only when it
is not the reader's default (the previous order less those gone, the new
ones after). Alerts travel when they change. The reader (``FrameAssembler``)
keeps the previous frame's values and builds only what changed: a steady
process costs nothing, a changed one one checked build (the codec's schema
check, core/stream/codec.py).

    delta = {"type": "delta", "seq": n, "time": t,
             "top": {...}?,                      # the frame's fields but gpus/time
             "g": {"<index>": {"gpu": {...}?, "p": [...]?, "u": {...}?, "x": [key...]?,
                               "o": [key...]?}},
             "go": [index...]?,                   # the GPUs, when the set or order changed
             "alerts": [...]?}

A process whose only change is in the figures that move every second
(``PATCHED``: memory, SM %, CPU %, host memory) travels in ``u`` as columns,
``{"k": [key...], "used": [...], "sm": [...]}`` (one value per key, null for
n/a; a column none of them changed is left out), and is rebuilt from the one held without a schema pass over the rest.
A process's key is its pid, or [pid, mig_uuid] on a MIG slice. A delta that
does not follow the frame the reader holds (``seq``), or that does not fit,
is refused (ValueError); the reader then waits for the next whole frame.
"""

from __future__ import annotations

import dataclasses
import math
import operator

from vramscope.core.samples import Frame, GpuProcess, GpuSample
from vramscope.core.stream import codec
from vramscope.core.stream.protocol import DELTA, FRAME, TYPE

KEYFRAME_EVERY = 60  # frames: a reader that lost its place is back within a minute at 1 s
# A frame of more processes than this (~350 kB of JSON) is sent whole ten times less
# often: at 16 GPUs x 1,024 processes a whole frame is 2.8 MB, which the reader
# parses in one call of ~100 ms (holding the GIL, so the window waits) and builds
# in ~250 ms; a reader that lost its place there is back within ten minutes.
BIG_FRAME = 2048
BIG_KEYFRAME_FACTOR = 10
# GpuProcess fields sent as columns, and the codec's check of each
PATCHED = {
    "used": codec._as_int,
    "sm": codec._as_int,
    "cpu_percent": codec._as_float,
    "host_memory": codec._as_int,
}
_PATCHED_KEYS = frozenset(PATCHED)
_GPUS, _PROCS, _TIME = "gpus", "processes", "time"


def process_key(wire: dict):
    """A process's key on its GPU (hashable; a list on the wire for MIG)."""
    mig = wire.get("mig_uuid")
    return wire.get("pid") if mig is None else (wire.get("pid"), mig)


def _on_wire(key):
    return list(key) if type(key) is tuple else key


def _from_wire_key(key):
    if type(key) is list and len(key) == 2:
        return tuple(key)
    if type(key) is int:
        return key
    raise ValueError(f"not a process key: {codec._shown(key)}")


@dataclasses.dataclass
class _GpuState:
    wire: dict  # the GPU's fields but its processes
    procs: dict  # key -> the process's wire dict
    order: list  # keys in the frame's order


def _split(frame_wire: dict):
    """(top, time, {index: _GpuState}, [indices]) of a whole frame's wire dict;
    None when it cannot be diffed (a GPU index or process key twice)."""
    top = {k: v for k, v in frame_wire.items() if k not in (_GPUS, _TIME)}
    gpus: dict = {}
    for g in frame_wire.get(_GPUS, ()):
        index = g.get("index")
        if index in gpus:
            return None
        procs = {}
        order = []
        for p in g.get(_PROCS, ()):
            key = process_key(p)
            if key in procs:
                return None
            procs[key] = p
            order.append(key)
        gpus[index] = _GpuState({k: v for k, v in g.items() if k != _PROCS}, procs, order)
    return top, frame_wire.get(_TIME), gpus, list(gpus)


class FrameDiffer:
    """The writer's side: each frame as the message that costs least to send and apply."""

    def __init__(self, keyframe_every: int = KEYFRAME_EVERY):
        self.keyframe_every = keyframe_every
        self._prev = None  # (top, gpus, order, alerts) of the previous frame
        self._seq = 0
        self._since_key = 0
        self._wires = _Wires()

    def message(self, frame: Frame, alerts: list) -> dict:
        wire = self._wires.frame(frame)
        split = _split(wire)
        prev = self._prev
        self._seq += 1
        every = self.keyframe_every
        if split is not None and sum(len(state.order) for state in split[2].values()) > BIG_FRAME:
            every *= BIG_KEYFRAME_FACTOR
        if split is None or prev is None or self._since_key + 1 >= every:
            self._prev = None if split is None else (split[0], split[2], split[3], alerts)
            self._since_key = 0
            return {TYPE: FRAME, "frame": wire, "alerts": alerts, "seq": self._seq}
        top, time, gpus, order = split
        p_top, p_gpus, p_order, p_alerts = prev
        out: dict = {TYPE: DELTA, "seq": self._seq, "time": time}
        if top != p_top:
            out["top"] = top
        changed = {}
        for index, state in gpus.items():
            entry = _gpu_delta(p_gpus.get(index), state)
            if entry:
                changed[str(index)] = entry
        if changed:
            out["g"] = changed
        if order != p_order:
            out["go"] = order
        if alerts != p_alerts:
            out["alerts"] = alerts
        self._prev = (top, gpus, order, alerts)
        self._since_key += 1
        return out


class _Wires:
    """``codec.frame_to_wire`` made once per value: a process (or its description,
    a ProcessInfo) that is the same object as in the previous frame -- a source
    that keeps what did not change -- gets the same wire dict again, which the
    diff then compares by identity."""

    def __init__(self):
        self._procs: dict = {}  # id(GpuProcess) -> (it, its wire); the previous frame's
        self._infos: dict = {}  # id(ProcessInfo) -> (it, its wire)

    def frame(self, frame: Frame) -> dict:
        procs, infos = {}, {}
        gpus = []
        for gpu in frame.gpus:
            wire = codec.to_wire(dataclasses.replace(gpu, processes=()))
            if gpu.processes:
                wire[_PROCS] = [self._process(p, procs, infos) for p in gpu.processes]
            gpus.append(wire)
        self._procs, self._infos = procs, infos
        out = codec.to_wire(dataclasses.replace(frame, gpus=()))
        if gpus:
            out[_GPUS] = gpus
        return out

    def _process(self, proc: GpuProcess, procs: dict, infos: dict) -> dict:
        held = self._procs.get(id(proc))
        if held is None or held[0] is not proc:
            info = proc.info
            if info is None:
                held = (proc, codec.to_wire(proc))
            else:
                known = infos.get(id(info)) or self._infos.get(id(info))
                if known is None or known[0] is not info:
                    known = (info, codec.to_wire(info))
                infos[id(info)] = known
                held = (proc, _process_wire(proc, known[1]))
        elif held[0].info is not None:
            infos[id(held[0].info)] = self._infos.get(id(held[0].info)) or (held[0].info, held[1]["info"])
        procs[id(proc)] = held
        return held[1]


_MISSING = object()
_COMPUTE = GpuProcess.__dataclass_fields__["kinds"].default
# the GpuProcess fields _process_wire writes; a class with others is written by the codec
_PROCESS_FIELDS = ("pid", "used", "kinds", "sm", "info", "has_agent", "mig_uuid", "cpu_percent", "host_memory")


def _process_wire(proc: GpuProcess, info: dict) -> dict:
    """``codec.to_wire(proc)`` with its description's wire ``info`` already made
    (the same dict the codec makes, 4x faster: 16k of them a second on a big box)."""
    if codec._fields(GpuProcess)[0] != _PROCESS_FIELDS:
        return codec.to_wire_but(proc, "info", info)
    out = {"pid": proc.pid, "used": proc.used}
    if proc.kinds != _COMPUTE:
        out["kinds"] = list(proc.kinds)
    if proc.sm is not None:
        out["sm"] = proc.sm
    out["info"] = info
    if proc.has_agent is not False:
        out["has_agent"] = proc.has_agent
    if proc.mig_uuid is not None:
        out["mig_uuid"] = proc.mig_uuid
    if proc.cpu_percent is not None:
        out["cpu_percent"] = proc.cpu_percent
    if proc.host_memory is not None:
        out["host_memory"] = proc.host_memory
    return out


def _only_figures(was: dict, now: dict) -> bool:
    """Whether two wire dicts of one process differ only in PATCHED fields."""
    for name, value in now.items():
        if name not in _PATCHED_KEYS:
            old = was.get(name, _MISSING)
            if old is not value and old != value:
                return False
    return all(name in now or name in _PATCHED_KEYS for name in was)


def _gpu_delta(prev: _GpuState | None, now: _GpuState) -> dict:
    entry: dict = {}
    if prev is None or prev.wire != now.wire:
        entry["gpu"] = now.wire
    old = prev.procs if prev is not None else {}
    changed, patched = [], []
    for key, p in now.procs.items():
        was = old.get(key)
        if was is p or was == p:
            continue
        if was is not None and _only_figures(was, p):
            patched.append((key, was, p))
        else:
            changed.append(p)
    if changed:
        entry["p"] = changed
    if patched:
        entry["u"] = {
            "k": [_on_wire(k) for k, _, _ in patched],
            **{
                name: [p.get(name) for _, _, p in patched]
                for name in PATCHED
                if any(was.get(name) != p.get(name) for _, was, p in patched)
            },
        }
    gone = [key for key in old if key not in now.procs]
    if gone:
        entry["x"] = [_on_wire(k) for k in gone]
    dropped = set(gone)
    default = [k for k in (prev.order if prev is not None else ()) if k not in dropped]
    default += [k for k in now.order if k not in old]
    if default != now.order:
        entry["o"] = [_on_wire(k) for k in now.order]
    return entry


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
    if held.gpu is not None and processes == held.gpu.processes and gpu == dataclasses.replace(
        held.gpu, processes=gpu.processes
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
    waits for the next whole frame."""

    def __init__(self):
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
        frame = self._whole.decode(data)
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
        self._top = {k: v for k, v in data.items() if k not in (_GPUS, _TIME)}
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
        if type(top) is not dict or _GPUS in top:
            raise TypeError("top must be an object without gpus")
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
        frame = codec.from_wire(Frame, {**top, _TIME: message.get(_TIME)})
        frame = dataclasses.replace(frame, gpus=tuple(gpus[i].gpu for i in order))
        alerts = _alerts(message["alerts"]) if "alerts" in message else self._alerts
        self._top, self._order, self._alerts = top, list(order), alerts
        return frame, alerts

    def _gpu(self, held: _Held, entry: dict) -> None:
        if type(entry) is not dict:
            raise TypeError("a GPU's delta must be an object")
        if held.gpu is None and "gpu" not in entry:
            raise ValueError("a new GPU without its fields")
        objects = held.objects
        moved = False
        for key in _list(entry.get("x", [])):
            moved |= objects.pop(_from_wire_key(key), None) is not None
        if "p" in entry:
            codec._REUSE.previous = codec._REUSE.current = self._info_cache
            try:
                for p in _list(entry["p"]):
                    if type(p) is not dict:
                        raise TypeError("a process must be an object")
                    objects[process_key(p)] = codec.from_wire(GpuProcess, p)
            finally:
                codec._REUSE.previous = codec._REUSE.current = None
            moved = True
        if "u" in entry:
            for key, proc in _patched(objects, entry["u"]):
                objects[key] = proc
            moved = True
        if "o" in entry:
            order = [_from_wire_key(k) for k in _list(entry["o"])]
            held.objects = {k: objects[k] for k in order}  # KeyError: a process not held
            if len(held.objects) != len(objects):
                raise ValueError("the order does not name the processes held")
            objects, moved = held.objects, True
        if "gpu" in entry:
            wire = entry["gpu"]
            if type(wire) is not dict or _PROCS in wire:
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
        keys = list(map(_from_wire_key, keys))
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
