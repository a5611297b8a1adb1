"""Frames to JSON-ready dicts and back, for the stream (lossless for every
field of the frozen sample values in core/samples.py).

The encoding follows the dataclasses' own fields, so a field another part
of vramscope adds later travels without a change here; a field this side
does not know (a newer remote) is ignored, one it misses keeps its default.
A field that holds its default is left out (most are None most of the
time), which halves the bytes and the work on both sides.
Each class's converter is worked out once from its type hints (a frame of
8 GPUs x 8 processes is encoded or decoded in well under a millisecond).

Decoding is also the frame's schema check, done once at the edge: every field
must have its hint's type (an int for an int, a finite float within
``LIMIT_FLOAT``, a string of at most ``MAX_TEXT`` characters, null only where
the field may be None), lists hold at most ``MAX_ITEMS`` entries, and untyped
JSON (event data) at most ``MAX_DEPTH`` levels. A frame that does not fit is
refused whole (ValueError) -- a remote host's frames are input.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import threading
import types
import typing

from vramscope.core.process_columns import ProcessColumns
from vramscope.core.process_text import capped_cmdline
from vramscope.core.samples import AgentReport, Frame, GpuProcess, ProcessInfo
from vramscope.core.servers import ServerState

MAX_TEXT = 64 * 1024  # characters in one string of a frame (command lines are cut at 8 KiB)
MAX_ITEMS = 100_000  # entries in one list
MAX_DEPTH = 8  # levels of untyped JSON (an event's data)
LIMIT_INT = 1 << 63  # ints are bytes, pids, counts: int64 as NVML has them
LIMIT_FLOAT = 1e11  # floats are times (s since 1970: until the year 5138), watts, percents

# tuple[Any, ...] fields and what they hold
_ANY_AS = {(Frame, "agents"): AgentReport, (Frame, "servers"): ServerState}
_PLAIN = (bool, int, float, str, type(None))


def to_wire(value):
    """A dataclass value as plain dicts/lists (None stays None)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    plan = _PLANS.get(kind, _NO_PLAN)
    if plan is _NO_PLAN:
        plan = _PLANS[kind] = _fields(kind) if dataclasses.is_dataclass(kind) else None
    if plan is not None:
        names, defaults, get = plan
        out = {}
        for name, default, v in zip(names, defaults, get(value)):
            if v is default or (type(v) is type(default) and v == default):
                continue  # the reader's default gives it back
            out[name] = v if type(v) in _PLAIN else to_wire(v)
        return out
    if kind in (tuple, list, ProcessColumns):
        return [v if type(v) in _PLAIN else to_wire(v) for v in value]
    if kind is dict:
        return {str(k): to_wire(v) for k, v in value.items()}
    return str(value)


def to_wire_but(value, name: str, given):
    """``to_wire(value)`` (a dataclass) with field ``name``'s wire form ``given``
    (already made: a value that holds many equal parts makes each once)."""
    names, defaults, get = _fields(type(value))
    out = {}
    for field, default, v in zip(names, defaults, get(value)):
        if v is default or (type(v) is type(default) and v == default):
            continue
        out[field] = given if field == name else v if type(v) in _PLAIN else to_wire(v)
    return out


_PLANS: dict = {}  # type -> its _fields plan, or None for a type that is no dataclass
_NO_PLAN = object()


_REQUIRED = object()  # no default: always written


@functools.cache
def _fields(cls):
    """(names, defaults, a getter of all values) of a dataclass; a
    default_factory's value counts as the default."""
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue  # worked out by the class itself (a cache), not data
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = _REQUIRED
        out.append((f.name, default))
    names = tuple(n for n, _ in out)
    getter = operator.attrgetter(*names)
    get = getter if len(names) > 1 else (lambda obj: (getter(obj),))
    return names, tuple(d for _, d in out), get


def frame_to_wire(frame: Frame) -> dict:
    return to_wire(frame)


def frame_from_wire(data: dict) -> Frame:
    """The Frame a dict describes; ValueError when it cannot be one."""
    return from_wire(Frame, data)


def from_wire(cls, data):
    """The ``cls`` (a dataclass) a dict describes, checked against its type hints;
    ValueError (one line) when it does not fit."""
    try:
        return _builder(cls)(data)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise ValueError(f"not a {cls.__name__}: {str(exc)[:200]}") from None


class FrameDecoder:
    """``frame_from_wire`` for one stream of frames. A process that reads as in
    the previous frame (a steady one: same memory, same SM %, same description)
    gets the same objects again, and so does a description (ProcessInfo) that
    did not change: a steady machine's frame then costs a dict comparison per
    process instead of a build."""

    def __init__(self):
        self._seen: dict = {}  # (class, key fields) -> (its wire dict, the value built)

    def forget(self) -> None:
        """Let the previous frame's values go (a reader that keeps its own from here)."""
        self._seen = {}

    def decode(self, data: dict) -> Frame:
        _REUSE.previous, _REUSE.current = self._seen, {}
        try:
            return frame_from_wire(data)
        finally:
            self._seen = _REUSE.current
            _REUSE.previous = _REUSE.current = None


_REUSE = threading.local()  # the FrameDecoder's values while it decodes on this thread
# the classes a FrameDecoder reuses, and the fields that find the previous frame's value
_REUSED = {ProcessInfo: ("pid", "start_time"), GpuProcess: ("pid", "used", "sm")}


def _reusing(cls, build):
    """``build`` for a class of _REUSED: the previous frame's value for equal data."""
    names = _REUSED[cls]

    def reuse(data):
        previous = getattr(_REUSE, "previous", None)
        if previous is None or type(data) is not dict:
            return build(data)
        key = (cls, *[data.get(n) for n in names])
        hit = previous.get(key)
        if hit is None or hit[0] != data:
            hit = (data, build(data))
        _REUSE.current[key] = hit
        return hit[1]

    return reuse


@functools.cache
def _builder(cls):
    hints = typing.get_type_hints(cls)
    plan = tuple(
        (f.name, _kept(_converter(hints[f.name], (cls, f.name)), (cls, f.name)), _nullable(f, hints[f.name]))
        for f in dataclasses.fields(cls)
        if f.init
    )

    def build(data):
        if type(data) is not dict:
            raise TypeError(f"{cls.__name__} expects an object, got {type(data).__name__}")
        kwargs = {}
        for name, convert, nullable in plan:
            if name in data:
                value = data[name]
                if value is None:
                    if not nullable:
                        raise TypeError(f"{cls.__name__}.{name} cannot be null")
                    kwargs[name] = None
                else:
                    kwargs[name] = convert(value)
        return cls(**kwargs)

    return _reusing(cls, build) if cls in _REUSED else build


# fields cut to what this side keeps of its own (a remote's 8 MB command line too)
_KEPT = {(ProcessInfo, "cmdline"): capped_cmdline}


def _kept(convert, where):
    cut = _KEPT.get(where)
    return convert if cut is None else (lambda value: cut(convert(value)))


def _nullable(field, hint) -> bool:
    return field.default is None or (
        typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)
    )


def _converter(hint, where):
    """A function that checks and converts one field's JSON value (TypeError when
    it does not fit the hint)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _converter(options[0], where) if len(options) == 1 else plain_json
    if origin is tuple or hint is tuple:
        args = typing.get_args(hint)
        item = args[0] if args else typing.Any
        if item is typing.Any:
            item = _ANY_AS.get(where, typing.Any)
        convert = _converter(item, where)

        def as_tuple(value):
            if type(value) is not list:
                raise TypeError(f"{where[1]} expects a list")
            if len(value) > MAX_ITEMS:
                raise ValueError(f"{where[1]} has more than {MAX_ITEMS} entries")
            if None in value:
                raise TypeError(f"{where[1]} holds a null")
            return tuple(map(convert, value))

        return as_tuple
    if dataclasses.is_dataclass(hint):
        return _builder(hint)
    return _SCALARS.get(hint, plain_json)


def _as_int(value):
    if type(value) is int and -LIMIT_INT < value < LIMIT_INT:
        return value
    raise TypeError(f"expected an integer, got {_shown(value)}")


def _as_float(value):
    if type(value) in (int, float) and -LIMIT_FLOAT <= value <= LIMIT_FLOAT:  # NaN fails too
        return float(value)
    raise TypeError(f"expected a finite number, got {_shown(value)}")


def _as_str(value):
    if type(value) is str and len(value) <= MAX_TEXT:
        return value
    raise TypeError(f"expected a string of at most {MAX_TEXT} characters, got {_shown(value)}")


def _as_bool(value):
    if type(value) is bool:
        return value
    raise TypeError(f"expected true or false, got {_shown(value)}")


def plain_json(value, depth: int = MAX_DEPTH):
    """Untyped JSON (an event's data, an alert) within the frame's bounds: the value
    itself, or TypeError/ValueError."""
    kind = type(value)
    if kind is float:
        return _as_float(value)
    if kind is str:
        return _as_str(value)
    if value is None or kind in (bool, int):
        return _as_int(value) if kind is int else value
    if depth <= 0:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if kind is list:
        if len(value) > MAX_ITEMS:
            raise ValueError(f"a list of more than {MAX_ITEMS} entries")
        return [plain_json(v, depth - 1) for v in value]
    if kind is dict:
        if len(value) > MAX_ITEMS:
            raise ValueError(f"an object of more than {MAX_ITEMS} entries")
        return {_as_str(k): plain_json(v, depth - 1) for k, v in value.items()}
    raise TypeError(f"not JSON: {kind.__name__}")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_SCALARS = {
    int: _as_int,
    float: _as_float,
    str: _as_str,
    bool: _as_bool,
    dict: lambda v: _dict(plain_json(v)),
    typing.Any: plain_json,
}


def _dict(value):
    if type(value) is not dict:
        raise TypeError(f"expected an object, got {_shown(value)}")
    return value
