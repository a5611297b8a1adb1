"""Hypothesis strategies derived from the wire's declared types, and a check
that a value holds the types its declaration says.

``values_of(hint)`` builds values of any type the stream's vocabulary uses --
frozen dataclasses, TypedDicts, tuples, ``dict[str, V]``, unions, the JSON
scalars and ``protocol.JsonObject`` -- by reading the type hints, so a field
added to a dataclass is covered the day it is added. ``assert_typed(hint,
value)`` walks a decoded value and fails where something is not what its
declaration says (a dict where a dataclass is declared, a list for a tuple).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing

from hypothesis import strategies as st

from vramscope.agent.protocol import JsonObject
from vramscope.core.processes.process_columns import ProcessColumns
from vramscope.core.stream.codec import _HINT_NAMES

SMALL = 2  # entries in a generated list or dict

_json_atoms = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(-1e9, 1e9, allow_nan=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    _json_atoms,
    lambda inner: (
        st.lists(inner, max_size=SMALL) | st.dictionaries(st.text(max_size=6), inner, max_size=SMALL)
    ),
    max_leaves=6,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=SMALL)

_SCALARS = {
    int: st.integers(-(2**62), 2**62),
    float: st.floats(-1e10, 1e10, allow_nan=False),
    # (text from /proc, NVML and the agent never holds NUL: the stream's flat process
    # columns use it as their separator)
    str: st.text(st.characters(blacklist_characters="\x00"), max_size=12),
    bool: st.booleans(),
    JsonObject: json_objects,
}


def _hints(cls) -> dict:
    return typing.get_type_hints(cls, localns=_HINT_NAMES)


@functools.cache
def values_of(hint) -> st.SearchStrategy:
    """Every value of ``hint`` the wire can carry (within its bounds)."""
    if hint in _SCALARS:
        return _SCALARS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([st.none() if a is type(None) else values_of(a) for a in args])
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(values_of(args[0]), max_size=SMALL).map(tuple)
        return st.tuples(*map(values_of, args))
    if origin is list:
        return st.lists(values_of(args[0]), max_size=SMALL)
    if origin is dict:
        return st.dictionaries(st.text(max_size=8), values_of(args[1]), max_size=SMALL)
    if typing.is_typeddict(hint):
        hints = _hints(hint)
        required = {k: values_of(v) for k, v in hints.items() if k in hint.__required_keys__}
        optional = {k: values_of(v) for k, v in hints.items() if k not in hint.__required_keys__}
        return st.fixed_dictionaries(required, optional=optional)
    if dataclasses.is_dataclass(hint):
        hints = _hints(hint)
        fields = {
            f.name: st.deferred(lambda h=hints[f.name]: values_of(h))
            for f in dataclasses.fields(hint)
            if f.init
        }
        return st.builds(hint, **fields)
    raise TypeError(f"no strategy for {hint!r}")


def assert_typed(hint, value, where: str = "value") -> None:
    """Fail where ``value`` is not of the type ``hint`` declares, all the way down."""
    if hint in (int, str, bool):
        assert type(value) is hint, f"{where}: {type(value).__name__}, not {hint.__name__}"
        return
    if hint is float:
        assert type(value) is float, f"{where}: {type(value).__name__}, not float"
        return
    if hint is JsonObject:
        assert type(value) is dict, f"{where}: {type(value).__name__}, not a JSON object"
        return
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                assert_typed(option, value, where)
                return
            except AssertionError as exc:
                errors.append(str(exc))
        raise AssertionError("; ".join(errors))
    if origin in (tuple, list):
        if (
            origin is tuple and type(value) is ProcessColumns
        ):  # the stream reader's stand-in, equal to the tuple
            value = tuple(value)
        assert type(value) is origin, f"{where}: {type(value).__name__}, not {origin.__name__}"
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            for i, (a, v) in enumerate(zip(args, value, strict=True)):
                assert_typed(a, v, f"{where}[{i}]")
            return
        for i, v in enumerate(value):
            assert_typed(args[0], v, f"{where}[{i}]")
        return
    if origin is dict:
        assert type(value) is dict, f"{where}: {type(value).__name__}, not dict"
        for k, v in value.items():
            assert type(k) is str, f"{where}: key {k!r}"
            assert_typed(args[1], v, f"{where}[{k!r}]")
        return
    if typing.is_typeddict(hint):
        assert type(value) is dict, f"{where}: {type(value).__name__}, not {hint.__name__}"
        hints = _hints(hint)
        assert set(value) <= set(hints), f"{where}: undeclared keys {set(value) - set(hints)}"
        for k, v in value.items():
            assert_typed(hints[k], v, f"{where}.{k}")
        return
    if dataclasses.is_dataclass(hint):
        assert type(value) is hint, f"{where}: {type(value).__name__}, not {hint.__name__}"
        hints = _hints(hint)
        for f in dataclasses.fields(hint):
            if f.init:
                assert_typed(hints[f.name], getattr(value, f.name), f"{where}.{f.name}")
        return
    raise AssertionError(f"{where}: no check for {hint!r}")
