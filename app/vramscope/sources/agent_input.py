"""What an agent sends, checked before the monitor uses it: every value is untrusted.

An agent socket or final dump may be another user's (a container's
directory read through /proc/PID/root) or simply broken: a handshake field
that is a list, a "pid" of 10**30, a time of 1e400 or NaN, a "devices" that
is a string. Each function here takes what was decoded (the framing and
nesting are already bounded: sources/agent_connection.py, core/bounded_read.py)
and returns values of the expected types -- or raises ValueError, and the
item is counted as bad, never a traceback in the sampler thread.

Strings are kept (the window and `status` escape them where they print) but
bounded in length.
"""

from __future__ import annotations

import math

from vramscope.core.actions import PID_MAX

MAX_TEXT = 256  # a hostname, a device name, a namespace: short


def integer(value, lo: int = 0, hi: int = 1 << 62) -> int | None:
    """An int in [lo, hi], else None (bools are not numbers here)."""
    if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
        return value
    return None


def finite(value) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = float(value)
        return value if math.isfinite(value) else None
    return None


def text(value, limit: int = MAX_TEXT) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def time_of(item: dict) -> float:
    t = finite(item.get("t"))
    if t is None:
        raise ValueError("an item without a finite time")
    return t


def hello(raw) -> dict:
    """The handshake (or a final dump's "hello") with each field of its type, or None."""
    if not isinstance(raw, dict):
        raise ValueError("the handshake is not an object")
    pid = integer(raw.get("pid"), 1, PID_MAX)
    if pid is None:
        raise ValueError("the handshake names no valid pid")
    out = {"pid": pid, "start_ticks": integer(raw.get("start_ticks")),
           "start_time": finite(raw.get("start_time")),
           "hostname": text(raw.get("hostname")), "pid_namespace": text(raw.get("pid_namespace")),
           "rank": integer(raw.get("rank")), "local_rank": integer(raw.get("local_rank")),
           "world_size": integer(raw.get("world_size")),
           "rendezvous": text(raw.get("rendezvous"), 128),
           "protocol": integer(raw.get("protocol")), "agent_version": integer(raw.get("agent_version")),
           "interval": finite(raw.get("interval"))}
    if "ok" in raw:
        out["ok"] = raw["ok"] is True
    return out


def device(raw) -> dict:
    if not isinstance(raw, dict):
        raise ValueError("a device entry is not an object")
    name = text(raw.get("device"), 64)
    if name is None:
        raise ValueError("a device entry without a name")
    out = dict(raw)
    out["device"] = name
    out["uuid"] = text(raw.get("uuid"), 128)
    buckets = raw.get("buckets")
    out["buckets"] = buckets if isinstance(buckets, dict) else None
    note = raw.get("buckets_note")
    out["buckets_note"] = text(note) if note is not None else None
    return out


def sample(raw: dict) -> dict:
    """A sample item: a finite time, a list of device objects, settings and models of
    the right shapes."""
    time_of(raw)
    devices = raw.get("devices") or []
    if not isinstance(devices, list):
        raise ValueError("a sample's devices are not a list")
    out = dict(raw)
    out["devices"] = [device(d) for d in devices]
    settings = raw.get("settings")
    out["settings"] = {str(k)[:MAX_TEXT]: v for k, v in settings.items()
                       if isinstance(v, (str, int, float, bool)) or v is None} \
        if isinstance(settings, dict) else {}
    models = raw.get("models")
    out["models"] = [m for m in models if isinstance(m, dict)] if isinstance(models, list) else []
    step = raw.get("step")
    out["step"] = integer(step)
    out["input"] = measured_input(raw.get("input"))
    out["sharded"] = sharded(raw.get("sharded"))
    return out


def measured_input(raw) -> dict | None:
    """The training forward's input (agent/input_shape.py): a batch of at least 1, or None."""
    if not isinstance(raw, dict) or not integer(raw.get("batch"), 1):
        return None
    return {"batch": raw["batch"], "seq": integer(raw.get("seq"), 1),
            "output_bytes": integer(raw.get("output_bytes")), "model": text(raw.get("model"), 64)}


SHARDED = ("fsdp_unsharded", "ddp_buckets")  # agent/sharded.py's figures


def sharded(raw) -> dict | None:
    """{figure: {device: bytes} or None} for the known figures; None when there are none."""
    if not isinstance(raw, dict):
        return None
    out = {}
    for name in SHARDED:
        per = raw.get(name)
        if isinstance(per, dict):
            out[name] = {str(d)[:64]: v for d, v in list(per.items())[:64] if integer(v) is not None}
        elif name in raw:
            out[name] = None
    return out or None


def step(raw: dict) -> dict:
    """A step item: a finite time, an integer step, devices as {name: object}."""
    time_of(raw)
    number = integer(raw.get("step"))
    if number is None:
        raise ValueError("a step item without a step number")
    devices = raw.get("devices") or {}
    if not isinstance(devices, dict) or not all(isinstance(d, dict) for d in devices.values()):
        raise ValueError("a step's devices are not objects by name")
    out = dict(raw)
    out["step"] = number
    out["devices"] = {str(k)[:64]: v for k, v in devices.items()}
    order = raw.get("phase_order")
    out["phase_order"] = [p for p in order if isinstance(p, str)] if isinstance(order, list) else []
    out["duration"] = finite(raw.get("duration"))
    return out


def event(raw: dict) -> tuple[str, float, dict]:
    """(kind, time, data) of an event item."""
    kind = text(raw.get("event"), 64)
    if kind is None:
        raise ValueError("an event without a kind")
    data = raw.get("data")
    return kind, time_of(raw), data if isinstance(data, dict) else {}
