"""Frames to JSON-ready dicts and back, for the stream (lossless for every
field of the frozen sample values in core/samples.py).

The encoding follows the dataclasses' own fields, so a field another part
of vramscope adds later travels without a change here; a field this side
does not know (a newer remote) is ignored, one it misses keeps its default.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing

from vramscope.core.samples import AgentReport, Frame

_ANY_AS = {(Frame, "agents"): AgentReport}  # tuple[Any, ...] fields and what they hold


def to_wire(value):
    """A dataclass value as plain dicts/lists (None stays None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_wire(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_wire(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def frame_to_wire(frame: Frame) -> dict:
    return to_wire(frame)


def frame_from_wire(data: dict) -> Frame:
    """The Frame a dict describes; ValueError when it cannot be one."""
    try:
        return _build(Frame, data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ValueError(f"not a frame: {exc}") from None


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _build(cls, data):
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} expects an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = _decode(hints[f.name], data[f.name], (cls, f.name))
    return cls(**kwargs)


def _decode(hint, value, where):
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _decode(options[0], value, where) if len(options) == 1 else value
    if origin is tuple:
        if not isinstance(value, list):
            raise TypeError(f"{where[1]} expects a list")
        item = typing.get_args(hint)[0]
        if item is typing.Any:
            item = _ANY_AS.get(where, typing.Any)
        return tuple(_decode(item, v, where) for v in value)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
