"""The converters of JSON's containers, checked against a declared type: a list
as ``tuple[X, ...]`` / ``list[X]`` or a fixed tuple, an object as ``dict[str, V]``
or a TypedDict, a union (``X | Y``, ``X | None``). Each takes the converters of its
parts and gives one that checks a whole value and converts it (TypeError or
ValueError, one line, when it does not fit); the atoms' checks are
json_checks.py's. core/stream/codec.py puts them together for every type hint
of the frozen sample values.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Sequence

from vramscope.core.stream.json_checks import MAX_ITEMS, as_str, shown

# one value's check: its JSON value in, the value of its declared type out (TypeError/ValueError)
Convert = Callable[[object], object]
# a TypedDict's keys: (name, its converter, whether it may be null)
KeyPlan = tuple[tuple[str, Convert, bool], ...]


def optional(hint: object) -> bool:
    """Whether ``hint`` admits None (``X | None``)."""
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


class UntypedField(TypeError):
    """A field whose declared type does not say what it holds (a bare ``tuple``,
    ``dict``, ``list``, ``Any``): refused when its decoder is built, at import."""


def named(where: tuple[object, str]) -> str:
    owner, name = where
    return f"{getattr(owner, '__name__', owner)}.{name}"


def or_none(convert: Convert) -> Convert:
    """For an Optional type: null stays None (a dataclass's or TypedDict's own
    field never gets here with null: their builders handle it first)."""
    return lambda value: None if value is None else convert(value)


def first_fitting(converters: list[Convert]) -> Convert:
    """For a union of types: the first whose check the value passes."""

    def either(value: object) -> object:
        for convert in converters:
            try:
                return convert(value)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{shown(value)} fits none of its types")

    return either


def sequence(
    convert: Convert, where: tuple[object, str], kind: Callable[[Iterable[object]], Sequence[object]]
) -> Convert:
    def as_sequence(value: object) -> object:
        if type(value) is not list:
            raise TypeError(f"{where[1]} expects a list")
        if len(value) > MAX_ITEMS:
            raise ValueError(f"{where[1]} has more than {MAX_ITEMS} entries")
        return kind(map(convert, value))

    return as_sequence


def fixed_tuple(converters: list[Convert], where: tuple[object, str]) -> Convert:
    def as_fixed(value: object) -> object:
        if type(value) is not list or len(value) != len(converters):
            raise TypeError(f"{where[1]} expects a list of {len(converters)}")
        return tuple(convert(v) for convert, v in zip(converters, value))

    return as_fixed


def mapping(convert: Convert, where: tuple[object, str]) -> Convert:
    def as_mapping(value: object) -> object:
        if type(value) is not dict:
            raise TypeError(f"{where[1]} expects an object")
        if len(value) > MAX_ITEMS:
            raise ValueError(f"{where[1]} has more than {MAX_ITEMS} entries")
        return {as_str(k): convert(v) for k, v in value.items()}

    return as_mapping


def typed_object(name: str, plan: KeyPlan, required: frozenset[str]) -> Convert:
    """A TypedDict's checker: its declared keys with their types (a required one
    must be there), keys it does not declare left out (a newer peer's)."""

    def build(data: object) -> object:
        if type(data) is not dict:
            raise TypeError(f"{name} expects an object, got {shown(data)}")
        out: dict[str, object] = {}  # (a TypedDict's keys, each checked)
        for key, convert, nullable in plan:
            if key in data:
                value = data[key]
                if value is None and not nullable:
                    raise TypeError(f"{name}.{key} cannot be null")
                out[key] = None if value is None else convert(value)
            elif key in required:
                raise TypeError(f"{name} without {key}")
        return out

    return build
