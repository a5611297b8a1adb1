"""What an agent sends, checked before the monitor uses it: every value is untrusted.

An agent socket or final dump may be another user's (a container's
directory read through /proc/PID/root) or simply broken: a handshake field
that is a list, a "pid" of 10**30, a time of 1e400 or NaN, a "devices" that
is a string. Each function here takes what was decoded (the framing and
nesting are already bounded: sources/agents/agent_connection.py, core/safe_io/bounded_read.py)
and returns one frozen value with typed fields (``Hello``, ``Sample``,
``Step``, ``Event``; a sample's devices become ``AgentDevice``s) -- or raises
ValueError with a one-line reason, and the item is counted as bad, never a
traceback in the sampler thread. The rest of the monitor reads attributes,
never the wire's keys (their shapes: the ``TypedDict``s in agent/protocol/items.py).

A new item kind follows the same pattern: its TypedDict in agent/protocol/items.py,
a frozen dataclass and a decoder here, and the client (sources/agents/agent_client.py)
dispatching on its kind.

Strings are kept (the window and `status` escape them where they print) but
bounded in length.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import overload

from vramscope.agent.protocol import (
    AGENT_BUCKETS,
    ALLOCATOR_FIGURES,
    PEAK_BOUND,
    PHASES_MEASURED,
    AllocatorSetting,
    InputItem,
    JsonObject,
    ModelItem,
    ShardedItem,
    StepDevice,
    StepItem,
)
from vramscope.core.end_process.actions import PID_MAX
from vramscope.core.stream.codec import decoded
from vramscope.core.samples import AgentBuckets, AgentDevice

MAX_TEXT = 256  # a hostname, a device name, a namespace: short


def integer(value: object, lo: int = 0, hi: int = 1 << 62) -> int | None:
    """An int in [lo, hi], else None (bools are not numbers here)."""
    if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
        return value
    return None


def finite(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = float(value)
        return value if math.isfinite(value) else None
    return None


@overload
def text(value: str, limit: int = MAX_TEXT) -> str: ...
@overload
def text(value: object, limit: int = MAX_TEXT) -> str | None: ...
def text(value: object, limit: int = MAX_TEXT) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def time_of(item: Mapping[str, object]) -> float:
    t = finite(item.get("t"))
    if t is None:
        raise ValueError("an item without a finite time")
    return t


def _object(raw: object, what: str) -> dict[str, object]:
    if not isinstance(raw, dict):
        raise ValueError(f"{what} is not an object")
    return raw


@dataclass(frozen=True, slots=True)
class Hello:
    """The handshake (protocol.HelloReply), or a final dump's "hello"."""

    pid: int  # inside the agent's own PID namespace
    start_ticks: int | None = None
    start_time: float | None = None
    hostname: str | None = None
    pid_namespace: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    rendezvous: str | None = None  # the distributed job's MASTER_ADDR:PORT (its ranks share it)
    protocol: int | None = None
    agent_version: int | None = None
    interval: float | None = None


def hello(raw: object) -> Hello:
    """The handshake (protocol.HelloReply, or a final dump's "hello") with each field of its type."""
    raw = _object(raw, "the handshake")
    pid = integer(raw.get("pid"), 1, PID_MAX)
    if pid is None:
        raise ValueError("the handshake names no valid pid")
    return Hello(
        pid=pid,
        start_ticks=integer(raw.get("start_ticks")),
        start_time=finite(raw.get("start_time")),
        hostname=text(raw.get("hostname")),
        pid_namespace=text(raw.get("pid_namespace")),
        rank=integer(raw.get("rank")),
        local_rank=integer(raw.get("local_rank")),
        world_size=integer(raw.get("world_size")),
        rendezvous=text(raw.get("rendezvous"), 128),
        protocol=integer(raw.get("protocol")),
        agent_version=integer(raw.get("agent_version")),
        interval=finite(raw.get("interval")),
    )


_FIGURES = (*ALLOCATOR_FIGURES, "total")


def _bytes(value: object) -> int | None:
    """A byte count or counter: an int (a float is rounded down), else None."""
    value = finite(value) if isinstance(value, float) else value
    return integer(int(value) if isinstance(value, float) else value, -(1 << 62), 1 << 62)


def device(raw: object) -> AgentDevice:
    """One device of a sample (protocol.DeviceFigures)."""
    raw = _object(raw, "a device entry")
    name = text(raw.get("device"), 64)
    if name is None:
        raise ValueError("a device entry without a name")
    b = raw.get("buckets")
    note = raw.get("buckets_note")
    buckets = (
        AgentBuckets(
            **{k: _bytes(b.get(k)) for k in AGENT_BUCKETS}, note=text(note) if isinstance(note, str) else None
        )
        if isinstance(b, dict)
        else None
    )
    missing = raw.get("missing")
    return AgentDevice(
        device=name,
        gpu_uuid=text(raw.get("uuid"), 128),
        buckets=buckets,
        peak_allocated_bound=_bytes(raw.get(PEAK_BOUND)),
        runtime=text(raw.get("runtime")),
        missing=tuple(text(m, 64) for m in missing[:64] if isinstance(m, str))
        if isinstance(missing, list)
        else (),
        **{k: _bytes(raw.get(k)) for k in _FIGURES},
    )


@dataclass(frozen=True, slots=True)
class Sample:
    """A sample item (protocol.SampleItem)."""

    t: float
    step: int | None = None
    devices: tuple[AgentDevice, ...] = ()
    settings: MappingProxyType[str, AllocatorSetting] = field(
        default_factory=lambda: MappingProxyType({})
    )  # allocator's
    models: tuple[ModelItem, ...] = ()
    phases_measured: float | None = None  # share of steps with phase readings
    input: InputItem | None = None  # the training forward's input (measured_input)
    sharded: ShardedItem | None = None  # FSDP2's unsharded copies, DDP's buckets (sharded)


def _share(v: object) -> float | None:
    v = finite(v)
    return v if v is not None and 0 <= v <= 1 else None


def sample(raw: object) -> Sample:
    """A sample item (protocol.SampleItem): a finite time, a list of device objects, settings and models of
    the right shapes."""
    raw = _object(raw, "a sample")
    t = time_of(raw)
    devices = raw.get("devices") or []
    if not isinstance(devices, list):
        raise ValueError("a sample's devices are not a list")
    settings = raw.get("settings")
    settings = (
        {
            str(k)[:MAX_TEXT]: v
            for k, v in settings.items()
            if isinstance(v, (str, int, float, bool)) or v is None
        }
        if isinstance(settings, dict)
        else {}
    )
    models = raw.get("models")
    figures = raw.get("agent")
    return Sample(
        t=t,
        step=integer(raw.get("step")),
        devices=tuple(device(d) for d in devices),
        settings=MappingProxyType(settings),
        models=decoded(tuple[ModelItem, ...], models) if isinstance(models, list) else (),
        phases_measured=_share(figures.get(PHASES_MEASURED)) if isinstance(figures, dict) else None,
        input=measured_input(raw.get("input")),
        sharded=sharded(raw.get("sharded")),
    )


def measured_input(raw: object) -> InputItem | None:
    """The training forward's input (agent/tensors/input_shape.py): a batch of at least 1, or None."""
    if not isinstance(raw, dict) or not integer(raw.get("batch"), 1):
        return None
    return {
        "batch": raw["batch"],
        "seq": integer(raw.get("seq"), 1),
        "output_bytes": integer(raw.get("output_bytes")),
        "model": text(raw.get("model"), 64),
    }


SHARDED = ("fsdp_unsharded", "ddp_buckets")  # agent/tensors/sharded.py's figures


def sharded(raw: object) -> ShardedItem | None:
    """{figure: {device: bytes} or None} for the known figures; None when there are none."""
    if not isinstance(raw, dict):
        return None
    out: dict[str, object] = {}
    for name in SHARDED:
        per = raw.get(name)
        if isinstance(per, dict):
            out[name] = {str(d)[:64]: v for d, v in list(per.items())[:64] if integer(v) is not None}
        elif name in raw:
            out[name] = None
    scheme = text(raw.get("scheme"), 16)
    if scheme is not None:  # what the run is (FSDP2, DDP, ZeRO) and over how many ranks
        out["scheme"] = scheme
        out["world_size"] = integer(raw.get("world_size"), 1, 1 << 20)
        out["zero_stage"] = integer(raw.get("zero_stage"), 0, 3)
        note = text(raw.get("note"))
        if note is not None:
            out["note"] = note
    return typing.cast(ShardedItem, out) if out else None  # (its keys declared, each value checked)


@dataclass(frozen=True, slots=True)
class Step:
    """A step item (protocol.StepItem)."""

    t: float
    step: int
    duration: float | None = None
    devices: dict[str, StepDevice] = field(default_factory=dict)
    phases: dict[str, dict[str, int | None]] | None = None  # device -> phase -> allocated at its end
    phase_order: tuple[str, ...] = ()
    phase_times: dict[str, float] = field(default_factory=dict)  # phase -> time it was read
    # device -> phase -> (peak, its upper bound or None: exact); None: not measured
    phase_peaks: dict[str, dict[str, tuple[int | None, int | None]]] | None = None

    def event_data(self) -> JsonObject:
        """The data of the monitor's "step" event (AgentEvent), as sessions record it."""
        first: Mapping[str, object] = self.devices[sorted(self.devices)[0]] if self.devices else {}
        return JsonObject(
            {
                "step": self.step,
                "duration": self.duration,
                "devices": dict(self.devices) or None,
                # the first device's figures, flat (None where the step was not measured)
                "peak_allocated": first.get("peak_allocated"),
                "allocated_after": first.get("allocated_after"),
                "phases": self.phases,
                "phase_order": list(self.phase_order),
                "phase_times": dict(self.phase_times),
                "phase_peaks": self.phase_peaks,
            }
        )


def step(raw: object) -> Step:
    """A step item: a finite time, an integer step, every figure of the type
    protocol.StepItem declares (a value that is not: ValueError, the item is bad)."""
    t = time_of(_object(raw, "a step"))
    item = decoded(StepItem, raw)
    number = integer(item.get("step"))
    if number is None:
        raise ValueError("a step item without a step number")
    return Step(
        t=t,
        step=number,
        duration=item.get("duration"),
        devices=item.get("devices") or {},
        phases=item.get("phases"),
        phase_order=tuple(item.get("phase_order") or ()),
        phase_times=item.get("phase_times") or {},
        phase_peaks=item.get("phase_peaks"),
    )


@dataclass(frozen=True, slots=True)
class Event:
    """An event item (protocol.EventItem)."""

    kind: str  # protocol.EventKind, or a kind this monitor does not know (kept, shown)
    t: float
    data: JsonObject = field(default_factory=lambda: JsonObject({}))


def event(raw: object) -> Event:
    """An event item (protocol.EventItem): a kind, a finite time, its data within the wire's bounds."""
    raw = _object(raw, "an event")
    kind = text(raw.get("event"), 64)
    if kind is None:
        raise ValueError("an event without a kind")
    data = raw.get("data")
    return Event(
        kind=kind, t=time_of(raw), data=JsonObject({}) if data is None else decoded(JsonObject, data)
    )
