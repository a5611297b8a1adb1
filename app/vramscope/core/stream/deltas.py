"""What changed since the previous frame: the stream's ``delta`` messages
(protocol version 2; version 3 sends the agents apart, changed fields only:
core/stream/agent_deltas.py; version 4 each process as one flat object:
core/stream/flat_processes.py).

A busy machine's frame is large (16 GPUs x 1,024 processes: ~2 MB of JSON)
and mostly the same as the one before it. The writer (``FrameDiffer``) sends
a whole frame first and every ``KEYFRAME_EVERY`` frames (ten times fewer for a
frame of over ``BIG_FRAME`` processes), and in between
only what differs from the previous one: the frame's own fields when any
changed, and per GPU its own fields when changed, the processes that are
new or changed (whole), the keys of those gone, and the order only when it
is not the reader's default (the previous order less those gone, the new
ones after). Alerts travel when they change. The reader (``FrameAssembler``, core/stream/delta_reader.py)
keeps the previous frame's values and builds only what changed: a steady
process costs nothing, a changed one one checked build (the codec's schema
check, core/stream/codec.py).

    delta = {"type": "delta", "seq": n, "time": t,
             "top": {...}?,                      # the frame's fields but gpus/time (and agents)
             "ag": [...]?,                        # the agents that changed (version 3)
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
import typing
from collections.abc import Callable, Sequence

from vramscope.core.samples import Frame, GpuProcess, ProcessInfo
from vramscope.core.stream import agent_deltas, codec, flat_processes, json_checks
from vramscope.core.stream.protocol import DELTA, FRAME, GPUS, PROCESSES, STREAM_VERSION, TIME, TYPE, Wire


KEYFRAME_EVERY = 60  # frames: a reader that lost its place is back within a minute at 1 s
# A frame of more processes than this (~350 kB of JSON) is sent whole ten times less
# often: at 16 GPUs x 1,024 processes a whole frame is 2.8 MB, which the reader
# parses in one call of ~100 ms (holding the GIL, so the window waits) and builds
# in ~250 ms; a reader that lost its place there is back within ten minutes.
BIG_FRAME = 2048
BIG_KEYFRAME_FACTOR = 10
# GpuProcess fields sent as columns, and the codec's check of each
PATCHED: dict[str, codec.Convert] = {
    "used": json_checks.as_int,
    "sm": json_checks.as_int,
    "cpu_percent": json_checks.as_float,
    "host_memory": json_checks.as_int,
}


def process_key(wire: Wire) -> object:
    """A process's key on its GPU (hashable; a list on the wire for MIG)."""
    mig = wire.get("mig_uuid")
    return wire.get("pid") if mig is None else (wire.get("pid"), mig)


def _on_wire(key: object) -> object:
    return list(key) if type(key) is tuple else key


def from_wire_key(key: object) -> object:
    if type(key) is list and len(key) == 2:
        return tuple(key)
    if type(key) is int:
        return key
    raise ValueError(f"not a process key: {codec.shown(key)}")


@dataclasses.dataclass
class _GpuState:
    wire: Wire  # the GPU's fields but its processes
    procs: dict[object, Wire]  # key -> the process's wire dict
    order: list[object]  # keys in the frame's order


# (top, time, {index: _GpuState}, [indices]) of a whole frame's wire dict
_Split = tuple[Wire, object, dict[object, _GpuState], list[object]]
# what the writer keeps of the previous frame: (top, gpus, order, agents, alerts)
_Kept = tuple[
    Wire, dict[object, _GpuState], list[object], dict[tuple[object, object], Wire] | None, Sequence[object]
]


def _split(frame_wire: Wire) -> _Split | None:
    """(top, time, {index: _GpuState}, [indices]) of a whole frame's wire dict;
    None when it cannot be diffed (a GPU index or process key twice)."""
    top = {k: v for k, v in frame_wire.items() if k not in (GPUS, TIME)}
    gpus: dict[object, _GpuState] = {}
    # (the writer's own wire, _Wires.frame: its GPUs a list of objects, each one's processes too)
    for g in typing.cast(list[Wire], frame_wire.get(GPUS, ())):
        index = g.get("index")
        if index in gpus:
            return None
        procs = {}
        order = []
        for p in typing.cast(list[Wire], g.get(PROCESSES, ())):
            key = process_key(p)
            if key in procs:
                return None
            procs[key] = p
            order.append(key)
        gpus[index] = _GpuState({k: v for k, v in g.items() if k != PROCESSES}, procs, order)
    return top, frame_wire.get(TIME), gpus, list(gpus)


class FrameDiffer:
    """The writer's side: each frame as the message that costs least to send and apply."""

    def __init__(self, keyframe_every: int = KEYFRAME_EVERY, version: int = STREAM_VERSION) -> None:
        self.keyframe_every = keyframe_every
        self._prev: _Kept | None = None  # (top, gpus, order, agents, alerts) of the previous frame
        self._seq = 0
        self._since_key = 0
        # version 3 (processes as nested objects: what a reader of version 3 reads)
        # or 4 (flat: core/stream/flat_processes.py)
        self._wires = _Wires(flat_processes.is_flat(version))

    def message(self, frame: Frame, alerts: Sequence[object]) -> Wire:
        wire = self._wires.frame(frame)
        split = _split(wire)
        prev = self._prev
        self._seq += 1
        every = self.keyframe_every
        if split is not None and sum(len(state.order) for state in split[2].values()) > BIG_FRAME:
            every *= BIG_KEYFRAME_FACTOR
        if split is None or prev is None or self._since_key + 1 >= every:
            if split is not None:
                top, _time, gpus, order, agents = _apart(split)
                self._prev = (top, gpus, order, agent_deltas.held_wires(agents), alerts)
            else:
                self._prev = None
            self._since_key = 0
            return {TYPE: FRAME, "frame": wire, "alerts": alerts, "seq": self._seq}
        top, time, gpus, order, agents = _apart(split)
        p_top, p_gpus, p_order, p_agents, p_alerts = prev
        out: Wire = {TYPE: DELTA, "seq": self._seq, "time": time}
        if top != p_top:
            out["top"] = top
        changed_agents = agent_deltas.diff(p_agents, agents)
        if changed_agents is not None:
            out["ag"] = changed_agents
        changed: Wire = {}
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
        self._prev = (top, gpus, order, agent_deltas.held_wires(agents), alerts)
        self._since_key += 1
        return out


def _apart(split: _Split) -> tuple[Wire, object, dict[object, _GpuState], list[object], list[Wire]]:
    """(top without the agents, time, gpus, order, the agents' wire dicts) of ``_split``'s answer."""
    top, time, gpus, order = split
    agents = typing.cast(list[Wire], top.pop(agent_deltas.AGENTS, []))  # (the codec writes a tuple as a list)
    return top, time, gpus, order, agents


class _Wires:
    """``codec.frame_to_wire`` made once per value: a process (or its description,
    a ProcessInfo) that is the same object as in the previous frame -- a source
    that keeps what did not change -- gets the same wire dict again, which the
    diff then compares by identity."""

    def __init__(self, flat: bool = True) -> None:
        # id(GpuProcess) -> (it, its wire); the previous frame's
        self._procs: dict[int, tuple[GpuProcess, Wire]] = {}
        self._infos: dict[int, tuple[ProcessInfo, Wire]] = {}  # id(ProcessInfo) -> (it, its wire)
        self._info_wire: Callable[[ProcessInfo], Wire] = (
            flat_processes.info_to_wire if flat else codec.to_wire
        )
        self._process_wire: Callable[[GpuProcess, Wire | None], Wire] = (
            flat_processes.process_to_wire if flat else _nested_process_wire
        )

    def frame(self, frame: Frame) -> Wire:
        procs: dict[int, tuple[GpuProcess, Wire]] = {}
        infos: dict[int, tuple[ProcessInfo, Wire]] = {}
        gpus = []
        for gpu in frame.gpus:
            wire = codec.to_wire(dataclasses.replace(gpu, processes=()))
            if gpu.processes:
                wire[PROCESSES] = [self._process(p, procs, infos) for p in gpu.processes]
            gpus.append(wire)
        self._procs, self._infos = procs, infos
        out = codec.to_wire(dataclasses.replace(frame, gpus=()))
        if gpus:
            out[GPUS] = gpus
        return out

    def _process(
        self,
        proc: GpuProcess,
        procs: dict[int, tuple[GpuProcess, Wire]],
        infos: dict[int, tuple[ProcessInfo, Wire]],
    ) -> Wire:
        held = self._procs.get(id(proc))
        if held is None or held[0] is not proc:
            info = proc.info
            if info is None:
                held = (proc, self._process_wire(proc, None))
            else:
                known = infos.get(id(info)) or self._infos.get(id(info))
                if known is None or known[0] is not info:
                    known = (info, self._info_wire(info))
                infos[id(info)] = known
                held = (proc, self._process_wire(proc, known[1]))
        elif held[0].info is not None:
            info = held[0].info
            infos[id(info)] = self._infos.get(id(info)) or (info, self._info_wire(info))
        procs[id(proc)] = held
        return held[1]


_MISSING = object()


def _nested_process_wire(proc: GpuProcess, info: Wire | None) -> Wire:
    """``codec.to_wire(proc)`` (version 3), its description's wire ``info`` already made."""
    return codec.to_wire(proc) if info is None else codec.to_wire_but(proc, "info", info)


def _only_figures(was: Wire, now: Wire) -> bool:
    """Whether two wire dicts of one process differ only in PATCHED fields (``now``
    with ``was``'s figures compared at C speed: a flat process has ~10 fields)."""
    probe = now.copy()
    for name in PATCHED:
        old = was.get(name, _MISSING)
        if old is _MISSING:
            probe.pop(name, None)
        else:
            probe[name] = old
    return probe == was


def _gpu_delta(prev: _GpuState | None, now: _GpuState) -> Wire:
    entry: Wire = {}
    if prev is None or prev.wire != now.wire:
        entry["gpu"] = now.wire
    old = prev.procs if prev is not None else {}
    changed: list[Wire] = []
    patched: list[tuple[object, Wire, Wire]] = []
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
