"""Parsers for the planner's inputs: parameter counts and memory sizes.

    parse_count("7B") == 7_000_000_000      parse_count("7e9") == 7_000_000_000
    parse_count("6,738,415,616")            parse_count("500M")
    parse_size("24GiB") == 24 * 2**30       parse_size("80GB") == 80 * 10**9

A memory size needs a unit: "24" alone could be bytes, GB or GiB, so it is
refused rather than guessed. A parameter count below 1,000 without a suffix
("7") is refused with a hint: no model has 7 parameters, "7B" was meant. Every failure is a ValueError with a message
that says what was expected.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from vramscope.core.units import GB, GiB, KiB, MB, MiB

# Parameter-count suffixes are decimal, as model names use them (7B = 7e9).
MIN_BARE_COUNT = 1000  # a count without a suffix below this is a missing unit
_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}

# Memory units: decimal (GB = 10**9, as model cards and the ZeRO paper's tables) and
# binary (GiB = 2**30).
_SIZE_UNIT = {
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "kb": 10**3,
    "mb": MB,
    "gb": GB,
    "tb": 10**12,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": 1 << 40,
}

_NUMBER = r"(?P<num>[0-9][0-9_,]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
_COUNT_RE = re.compile(r"^\s*" + _NUMBER + r"\s*(?P<suffix>[a-zA-Z]?)\s*$")
_SIZE_RE = re.compile(r"^\s*" + _NUMBER + r"\s*(?P<unit>[a-zA-Z]*)\s*$")


def _decimal(text: str) -> Decimal:
    cleaned = text.replace(",", "").replace("_", "")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a number") from None
    if not value.is_finite():
        raise ValueError(f"{text!r} is not a finite number")
    if value.adjusted() > 15:  # checked before any int(): 1e999999999 must not hang
        raise ValueError(f"{text!r} is implausibly large")
    return value


def parse_count(text: str) -> int:
    """A parameter count: 7e9, 7B, 13b, 1.5B, 500M, 124,439,808. Must be > 0."""
    if not isinstance(text, str):
        raise ValueError("a parameter count must be text such as 7B or 7e9")
    m = _COUNT_RE.match(text)
    if not m:
        raise ValueError(
            f"{text!r} is not a parameter count: use a number such as 7e9 or "
            "6738415616, or a suffix K/M/B/T such as 7B, 13B, 70B, 500M"
        )
    suffix = m.group("suffix").lower()
    if suffix not in _COUNT_SUFFIX:
        raise ValueError(f"{text!r}: unknown suffix {m.group('suffix')!r} (use K, M, B or T)")
    value = _decimal(m.group("num")) * _COUNT_SUFFIX[suffix]
    if value > 10**16:
        raise ValueError(f"{text!r} is implausibly large for a parameter count")
    if value != value.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number of parameters")
    count = int(value)
    if count <= 0:
        raise ValueError(f"{text!r}: a model needs at least one parameter")
    if not suffix and count < MIN_BARE_COUNT:
        raise ValueError(
            f"{text!r}: no model has {count} parameters -- did you mean "
            f"{text.strip()}B? Give a unit (B, M, K) or the full count"
        )
    return count


def parse_size(text: str) -> int:
    """A memory size with its unit: 24GiB, 80GB, 81920MiB, 40 GB. Must be > 0."""
    if not isinstance(text, str):
        raise ValueError("a memory size must be text such as 24GiB or 80GB")
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(
            f"{text!r} is not a memory size: use a number and a unit, "
            "e.g. 24GiB (2**30 bytes each) or 80GB (10**9 bytes each)"
        )
    unit = m.group("unit").lower()
    if not unit:
        raise ValueError(
            f"{text!r} has no unit: write 24GiB (binary) or 24GB (decimal); a bare number is ambiguous"
        )
    if unit not in _SIZE_UNIT:
        raise ValueError(
            f"{text!r}: unknown unit {m.group('unit')!r} (use B, KB, MB, GB, TB or KiB, MiB, GiB, TiB)"
        )
    value = _decimal(m.group("num")) * _SIZE_UNIT[unit]
    if value > 1 << 60:
        raise ValueError(f"{text!r} is implausibly large for a GPU")
    size = int(value.to_integral_value(rounding="ROUND_FLOOR"))
    if size <= 0:
        raise ValueError(f"{text!r}: a GPU needs some memory")
    return size


def parse_gpu_memory(text: str) -> tuple[str, int]:
    """'24GiB' -> ('24 GiB GPU', bytes); 'RTX 4090=24GiB' -> ('RTX 4090', bytes)."""
    if not isinstance(text, str):
        raise ValueError("a GPU memory size must be text such as 24GiB")
    name, sep, size_text = text.rpartition("=")
    if not sep:
        size_text, name = text, ""
    size = parse_size(size_text)
    name = name.strip() or f"{size_text.strip()} GPU"
    return name, size


def ceil_bytes(value: float | int) -> int:
    """Fractional byte counts (0.5 B/param at INT4) round up to whole bytes."""
    return int(math.ceil(value))
