"""Frames to JSON-ready dicts and back, for the stream (lossless for every
field of the frozen sample values in core/samples.py).

The encoding follows the dataclasses' own fields, so a field another part
of vramscope adds later travels without a change here; a field this side
does not know (a newer remote) is ignored, one it misses keeps its default.
A field that holds its default is left out (most are None most of the
time), which halves the bytes and the work on both sides.
Each class's converter is worked out once from its type hints (a frame of
8 GPUs x 8 processes is encoded or decoded in well under a millisecond); the
converters of lists, objects, unions and TypedDicts are core/stream/json_shapes.py's.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from vramscope.agent.protocol import JsonObject
from vramscope.core.processes.process_columns import ProcessColumns
from vramscope.core.processes.process_text import capped_cmdline
from vramscope.core.samples import Frame, GpuProcess, ProcessInfo
from vramscope.core.processes.servers import ServerState
from vramscope.core.stream.json_checks import (  # the wire's bounds, read through here too (__all__)
    LIMIT_FLOAT,
    LIMIT_INT,
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_TEXT,
    as_bool,
    as_float,
    as_int,
    as_str,
    json_object,
    plain_json,
    shown,
)
from vramscope.core.stream.json_shapes import (
    Convert,
    UntypedField,
    first_fitting,
    fixed_tuple,
    mapping,
    named,
    optional,
    or_none,
    sequence,
    typed_object,
)
from vramscope.core.stream.protocol import Wire

__all__ = [
    "LIMIT_FLOAT",
    "LIMIT_INT",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_TEXT",
    "Convert",
    "FrameDecoder",
    "UntypedField",
    "as_bool",
    "as_float",
    "as_int",
    "as_str",
    "decoded",
    "frame_from_wire",
    "frame_to_wire",
    "from_wire",
    "json_object",
    "plain_json",
    "shown",
    "to_wire",
    "to_wire_but",
]

T = TypeVar("T")
# a dataclass's fields as the writer reads them: (names, defaults, a getter of all values)
Plan = tuple[tuple[str, ...], tuple[object, ...], Callable[[Any], tuple[object, ...]]]

_PLAIN = (bool, int, float, str, type(None))
# names the type hints of core/samples.py use that it imports only for type checkers
_HINT_NAMES = {"ServerState": ServerState}

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@overload
def to_wire(value: DataclassInstance) -> Wire: ...
@overload
def to_wire(value: object) -> object: ...
def to_wire(value: object) -> object:
    """A dataclass value as plain dicts/lists (None stays None)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    plan = _PLANS.get(kind, _NO_PLAN)
    if plan is _NO_PLAN:
        plan = _PLANS[kind] = _fields(kind) if dataclasses.is_dataclass(kind) else None
    if plan is not None:
        names, defaults, get = plan
        out: Wire = {}
        for name, default, v in zip(names, defaults, get(value)):
            if v is default or (type(v) is type(default) and v == default):
                continue  # the reader's default gives it back
            out[name] = v if type(v) in _PLAIN else to_wire(v)
        return out
    if kind in (tuple, list, ProcessColumns) and isinstance(value, (tuple, list, ProcessColumns)):
        return [v if type(v) in _PLAIN else to_wire(v) for v in value]
    if type(value) is dict:
        return {str(k): to_wire(v) for k, v in value.items()}
    return str(value)


def to_wire_but(value: DataclassInstance, name: str, given: object) -> Wire:
    """``to_wire(value)`` (a dataclass) with field ``name``'s wire form ``given``
    (already made: a value that holds many equal parts makes each once)."""
    names, defaults, get = _fields(type(value))
    out: Wire = {}
    for field, default, v in zip(names, defaults, get(value)):
        if v is default or (type(v) is type(default) and v == default):
            continue
        out[field] = given if field == name else v if type(v) in _PLAIN else to_wire(v)
    return out


_PLANS: dict[type, Plan | None] = {}  # type -> its _fields plan, or None for a type that is no dataclass
_NO_PLAN: Plan = ((), (), lambda _value: ())  # "not worked out yet" (compared by identity)


_REQUIRED = object()  # no default: always written


@functools.cache
def _fields(cls: type[DataclassInstance]) -> Plan:
    """(names, defaults, a getter of all values) of a dataclass; a
    default_factory's value counts as the default."""
    out: list[tuple[str, object]] = []
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


def frame_to_wire(frame: Frame) -> Wire:
    return to_wire(frame)


def frame_from_wire(data: object) -> Frame:
    """The Frame a dict describes; ValueError when it cannot be one."""
    return from_wire(Frame, data)


def from_wire(cls: type[T], data: object) -> T:
    """The ``cls`` (a dataclass) a dict describes, checked against its type hints;
    ValueError (one line) when it does not fit."""
    owner: type = cls  # (functools.cache's arguments are Hashable: a type is, mypy's type[T] is not)
    try:
        # (the builder made it as cls(**fields), each checked against cls's hints)
        return typing.cast(T, _builder(owner)(data))
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise ValueError(f"not a {cls.__name__}: {str(exc)[:200]}") from None


class FrameDecoder:
    """``frame_from_wire`` for one stream of frames. A process that reads as in
    the previous frame (a steady one: same memory, same SM %, same description)
    gets the same objects again, and so does a description (ProcessInfo) that
    did not change: a steady machine's frame then costs a dict comparison per
    process instead of a build."""

    def __init__(self) -> None:
        # (class, key fields) -> (its wire dict, the value built)
        self._seen: dict[tuple[object, ...], tuple[object, object]] = {}

    def forget(self) -> None:
        """Let the previous frame's values go (a reader that keeps its own from here)."""
        self._seen = {}

    def decode(self, data: object) -> Frame:
        _REUSE.previous, _REUSE.current = self._seen, {}
        try:
            return frame_from_wire(data)
        finally:
            self._seen = _REUSE.current
            _REUSE.previous = _REUSE.current = None


_REUSE = threading.local()  # the FrameDecoder's values while it decodes on this thread
# the classes a FrameDecoder reuses, and the fields that find the previous frame's value
_REUSED: dict[type, tuple[str, ...]] = {ProcessInfo: ("pid", "start_time"), GpuProcess: ("pid", "used", "sm")}


def _reusing(cls: type, build: Convert) -> Convert:
    """``build`` for a class of _REUSED: the previous frame's value for equal data."""
    names = _REUSED[cls]

    def reuse(data: object) -> object:
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
def _builder(cls: type) -> Convert:
    hints = typing.get_type_hints(cls, localns=_HINT_NAMES)
    plan = tuple(
        (f.name, _kept(_converter(hints[f.name], (cls, f.name)), (cls, f.name)), _nullable(f, hints[f.name]))
        for f in dataclasses.fields(cls)
        if f.init
    )

    def build(data: object) -> object:
        if type(data) is not dict:
            raise TypeError(f"{cls.__name__} expects an object, got {type(data).__name__}")
        kwargs: dict[str, object] = {}
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
# (an empty argv -- a zombie's, a kernel thread's -- stays as it was sent)
_KEPT: dict[tuple[type, str], Callable[[Any], object]] = {
    (ProcessInfo, "cmdline"): lambda argv: capped_cmdline(argv) if argv else argv
}


def _kept(convert: Convert, where: tuple[type, str]) -> Convert:
    cut = _KEPT.get(where)
    return convert if cut is None else (lambda value: cut(convert(value)))


def _nullable(field: dataclasses.Field[Any], hint: object) -> bool:
    return field.default is None or optional(hint)


def _converter(hint: object, where: tuple[object, str]) -> Convert:
    """A function that checks and converts one field's JSON value (TypeError when
    it does not fit the hint)."""
    scalar = _SCALARS.get(hint)
    if scalar is not None:
        return scalar
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        convert = (
            _converter(options[0], where)
            if len(options) == 1
            else first_fitting([_converter(a, where) for a in options])
        )
        return convert if len(options) == len(args) else or_none(convert)
    if origin in (tuple, list):
        if not args:
            raise UntypedField(f"{named(where)}: {origin.__name__} of what?")
        if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
            return fixed_tuple([_converter(a, where) for a in args], where)
        return sequence(_converter(args[0], where), where, tuple if origin is tuple else list)
    if origin is dict:
        if not args or args[0] is not str:
            raise UntypedField(f"{named(where)}: a dict must say dict[str, VALUE]")
        return mapping(_converter(args[1], where), where)
    if typing.is_typeddict(hint):
        return _typed_dict(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _builder(hint)
    raise UntypedField(f"{named(where)}: {hint!r} says nothing the wire can check")


@functools.cache
def _typed_dict(cls: Any) -> Convert:
    """A TypedDict's checker (json_shapes.typed_object) with its keys' converters."""
    hints = typing.get_type_hints(cls, localns=_HINT_NAMES)
    plan = tuple((name, _converter(hint, (cls, name)), optional(hint)) for name, hint in hints.items())
    return typed_object(cls.__name__, plan, cls.__required_keys__)


@overload
def decoded(hint: type[T], value: object) -> T: ...
@overload
def decoded(hint: Callable[[Any], T], value: object) -> T: ...  # a NewType: protocol.JsonObject
def decoded(hint: object, value: object) -> object:
    """``value`` (JSON) checked against ``hint`` and converted to it (TypedDicts,
    dataclasses, tuples, unions ...): ValueError (one line) when it does not fit."""
    try:
        return _converter(hint, (hint, "value"))(value)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise ValueError(f"not a {getattr(hint, '__name__', hint)}: {str(exc)[:200]}") from None


_SCALARS: dict[object, Convert] = {
    int: as_int,
    float: as_float,
    str: as_str,
    bool: as_bool,
    JsonObject: json_object,
}

_builder(Frame)  # every field reachable from a Frame has a type the wire can check (else UntypedField)
