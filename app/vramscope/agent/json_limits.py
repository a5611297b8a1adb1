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
from typing import Any

MAX_DEPTH = 64  # the deepest object vramscope writes is about 8 levels


class TooDeep(ValueError):
    """JSON nested deeper than the limit."""


# Every ASCII character but the four brackets, deleted by str.translate.
_NOT_BRACKETS = dict.fromkeys(c for c in range(128) if chr(c) not in "[]{}")


def depth_within(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when JSON ``text`` that parses nests no container more than ``limit``
    levels deep (a top-level list or object is level 1).

    Read from the text with string operations that run in C, not by walking
    the parsed value in Python (a 16-GPU x 1,024-process frame, ~16k lists:
    the walk took longer than ``json.loads`` itself). The strings are taken out
    (escaped backslashes, then escaped quotes, then what lies between two
    quotes), so only structural brackets are left; ``{}`` count as ``[]``; each
    round removes every innermost pair, so a text nested ``d`` deep is empty
    after exactly ``d`` rounds."""
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(text.split('"')[::2])  # (valid JSON: ASCII outside its strings)
    brackets = outside.translate(_NOT_BRACKETS).replace("{", "[").replace("}", "]")
    for _ in range(limit):
        if not brackets:
            return True
        brackets = brackets.replace("[]", "")
    return not brackets


def loads(data: bytes | str, limit: int = MAX_DEPTH, **options: Any) -> object:
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
    if opened > limit and not depth_within(data, limit):
        raise TooDeep(f"JSON nested deeper than {limit} levels")
    return obj
