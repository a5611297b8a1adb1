"""Rows held as exact tuples, read as named tuples.

A named tuple is a tuple subclass, and CPython's garbage collector tracks every
instance of one for as long as it lives: a table of 16k named-tuple rows is 16k
more objects every full collection walks. An exact tuple whose items are atoms
(str, numbers, None, exact tuples of those) is untracked at the first
collection that meets it ("Optimization: delay tracking containers", CPython
devguide, https://devguide.python.org/internals/garbage-collector/), so a
table holds its rows that way and makes the named tuple of a row only when one
is read (the rows in view, a selection, a test), for as long as it is used.
"""

from __future__ import annotations

from collections.abc import Sequence


class HeldRows(Sequence):
    """A sequence of ``kind`` (a NamedTuple class) stored as exact tuples (``raw``)."""

    __slots__ = ("raw", "kind")

    def __init__(self, raw: tuple, kind: type):
        self.raw = raw
        self.kind = kind

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return HeldRows(self.raw[i], self.kind)
        return tuple.__new__(self.kind, self.raw[i])

    def __iter__(self):
        kind, new = self.kind, tuple.__new__
        return (new(kind, row) for row in self.raw)

    def __eq__(self, other) -> bool:
        if isinstance(other, HeldRows):
            return self.raw == other.raw
        if isinstance(other, (list, tuple)):
            return list(self.raw) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HeldRows({len(self.raw)} {self.kind.__name__})"


def exact(rows) -> tuple:
    """``rows`` (a HeldRows, or any rows) as a tuple of exact tuples."""
    if isinstance(rows, HeldRows):
        return rows.raw
    return tuple(row if type(row) is tuple else tuple(row) for row in rows)
