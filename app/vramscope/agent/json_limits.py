"""JSON from someone else, bounded in nesting (standard library only).

``json.loads`` recurses once per level of nesting: a body of a million
``[`` raises ``RecursionError`` (a traceback, not a message) long before it
costs memory. Whatever reads JSON it did not write -- an agent's frames, a
final dump, a file named on the command line, an HTTP body, a remote host's
frame -- parses it here: nesting
deeper than ``MAX_DEPTH`` is a ``ValueError`` with one line, like any other
malformed JSON. The byte size is bounded by the reader before this is called.
"""

from __future__ import annotations

import json

MAX_DEPTH = 64  # the deepest object vramscope writes is about 8 levels


class TooDeep(ValueError):
    """JSON nested deeper than the limit."""


def depth_within(obj, limit: int = MAX_DEPTH) -> bool:
    """True when no container in ``obj`` is nested more than ``limit`` levels deep
    (iterative: a deep value cannot exhaust the stack here)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def loads(data: bytes | str, limit: int = MAX_DEPTH, **options):
    """Parse JSON; ``ValueError`` (one line) for anything malformed or nested too deep.
    ``options`` go to ``json.loads`` (``parse_constant``, ``parse_float``)."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8: {exc}") from None
    opened = data.count("[") + data.count("{")
    try:
        obj = json.loads(data, **options)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {limit} levels") from None
    if opened > limit and not depth_within(obj, limit):
        raise TooDeep(f"JSON nested deeper than {limit} levels")
    return obj
