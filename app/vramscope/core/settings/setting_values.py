"""What each setting accepts (core/settings/user_settings.py): one check per kind of value, the
same for the file, the settings dialog and a command-line flag. A check returns
the value as kept or raises ValueError with a one-line reason.

The checks bound what is saved as well as what is read: a window layout, a list
of column names, a number, each has a size past which it is refused when set,
so the file the program writes always reads back under
``settings_file.SIZE_LIMIT`` (and is never put aside for its own size).
"""

from __future__ import annotations

import base64
import binascii
import math

from vramscope.core.flow.sampler import MAX_INTERVAL, MIN_INTERVAL

INTERVAL_RANGE = (MIN_INTERVAL, MAX_INTERVAL)  # seconds, as `vramscope --interval`
MAX_NUMBER = 1e12  # larger than any threshold means anything (1e400 reads as inf)
# bounds on what is saved, so the file stays far under settings_file.SIZE_LIMIT
MAX_NAMES = 64  # hidden columns (the process table has about 20)
MAX_NAME_CHARS = 64
MAX_STATE_BYTES = 32 * 1024  # a window layout (Qt's saveGeometry/saveState: a few KiB at most)


def number(value) -> float:
    """A number as float: refused when not a number (a bool, a string), NaN, infinite or
    beyond MAX_NUMBER."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    v = float(value)
    if not math.isfinite(v) or abs(v) > MAX_NUMBER:
        raise ValueError(f"{value!r} is not a usable number")
    return v


def as_bool(value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"not true or false: {value!r}")
    return value


def as_interval(value) -> float:
    v = number(value)
    lo, hi = INTERVAL_RANGE
    if not lo <= v <= hi:
        raise ValueError(f"{v:g} s is outside {lo:g} .. {hi:g} s")
    return v


def choice(options):
    def parse(value) -> str:
        if not isinstance(value, str) or value not in options:
            raise ValueError(f"{value!r} is not one of {', '.join(options)}")
        return value

    return parse


def as_cap(value) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= 1 << 62
    ):
        raise ValueError(f"the session cap must be a positive number of bytes (got {value!r})")
    return int(value)


def as_bytes(value) -> bytes | None:
    """Binary state (the window's layout): bytes in memory, base64 text in the file;
    at most MAX_STATE_BYTES."""
    if isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    elif isinstance(value, str):
        if len(value) > 2 * MAX_STATE_BYTES:  # (base64: 4 characters for 3 bytes)
            raise ValueError(f"{len(value):,} characters of layout, more than a window's")
        try:
            data = base64.b64decode(value.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise ValueError("not base64 text") from None
    else:
        raise ValueError(f"not binary data: {type(value).__name__}")
    if len(data) > MAX_STATE_BYTES:
        raise ValueError(f"{len(data):,} bytes of layout, over {MAX_STATE_BYTES:,}")
    return data


def as_names(value) -> tuple[str, ...]:
    """Column names: at most MAX_NAMES, each at most MAX_NAME_CHARS, each once."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"not a list of names: {str(value)[:80]}")
    names = tuple(dict.fromkeys(x.strip() for x in value if x.strip()))
    if len(names) > MAX_NAMES:
        raise ValueError(f"{len(names):,} names, more than the {MAX_NAMES} there can be")
    long = next((x for x in names if len(x) > MAX_NAME_CHARS), None)
    if long is not None:
        raise ValueError(f"a name of {len(long):,} characters, over {MAX_NAME_CHARS}")
    return names


def diagnostic_kind(default):
    """The check for a DiagnosticSettings field with this default."""
    if isinstance(default, bool):
        return as_bool
    if isinstance(default, int):
        return lambda v: int(number(v))
    return number


def in_file(value):
    """What a checked value is in TOML: bytes as base64 text, names as a list."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, tuple):
        return list(value)
    return value
