"""The bounds every value on a wire is checked against, and the checks of its
JSON atoms: the stream's frames (core/stream/codec.py), the agent's replies
(sources/agents/agent_input.py) and the settings requests read them. A value out of
bounds raises TypeError or ValueError with a one-line reason.
"""

from __future__ import annotations

from vramscope.agent.protocol import JsonObject

MAX_TEXT = 64 * 1024  # characters in one string of a frame (command lines are cut at 8 KiB)
MAX_ITEMS = 100_000  # entries in one list
MAX_DEPTH = 8  # levels of a JSON object whose shape varies (an event's data, an alert)
LIMIT_INT = 1 << 63  # ints are bytes, pids, counts: int64 as NVML has them
LIMIT_FLOAT = 1e11  # floats are times (s since 1970: until the year 5138), watts, percents


def as_int(value: object) -> int:
    if type(value) is int and -LIMIT_INT < value < LIMIT_INT:
        return value
    raise TypeError(f"expected an integer, got {shown(value)}")


def as_float(value: object) -> float:
    if (type(value) is int or type(value) is float) and -LIMIT_FLOAT <= value <= LIMIT_FLOAT:  # NaN fails too
        return float(value)
    raise TypeError(f"expected a finite number, got {shown(value)}")


def as_str(value: object) -> str:
    if type(value) is str and len(value) <= MAX_TEXT:
        return value
    raise TypeError(f"expected a string of at most {MAX_TEXT} characters, got {shown(value)}")


def as_bool(value: object) -> bool:
    if type(value) is bool:
        return value
    raise TypeError(f"expected true or false, got {shown(value)}")


def plain_json(value: object, depth: int = MAX_DEPTH) -> object:
    """JSON whose shape varies on purpose (an event's data, an alert) within the
    wire's bounds: the value itself, or TypeError/ValueError."""
    kind = type(value)
    if kind is float:
        return as_float(value)
    if kind is str:
        return as_str(value)
    if value is None or kind in (bool, int):
        return as_int(value) if kind is int else value
    if depth <= 0:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if type(value) is list:
        if len(value) > MAX_ITEMS:
            raise ValueError(f"a list of more than {MAX_ITEMS} entries")
        return [plain_json(v, depth - 1) for v in value]
    if type(value) is dict:
        return _members(value, depth)
    raise TypeError(f"not JSON: {kind.__name__}")


def _members(value: dict[object, object], depth: int) -> JsonObject:
    """A JSON object's members checked (plain_json) one level below ``depth``."""
    if len(value) > MAX_ITEMS:
        raise ValueError(f"an object of more than {MAX_ITEMS} entries")
    return JsonObject({as_str(k): plain_json(v, depth - 1) for k, v in value.items()})


def json_object(value: object) -> JsonObject:
    """A JSON object within the wire's bounds (protocol.JsonObject)."""
    if type(value) is not dict:
        raise TypeError(f"expected an object, got {shown(value)}")
    return _members(value, MAX_DEPTH)


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
