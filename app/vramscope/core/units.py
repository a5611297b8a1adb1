"""Honest units: GiB (2**30) vs GB (10**9), and 'n/a' for None -- and for anything
that is not a finite number (NaN, a string, an object from another process's
reply): a formatter shared by every output never raises."""

from __future__ import annotations

import math
import numbers

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10
GB = 10**9
MB = 10**6

NA = "n/a"


def finite_number(value: object) -> float | None:
    """``value`` as a finite float; None for None, a bool, a non-number, NaN, ±inf or an
    int past float's range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        v = float(value)
    except (OverflowError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt_bytes(value: int | float | None, digits: int = 1) -> str:
    """Binary units (KiB/MiB/GiB/TiB); None (or not a finite number) -> 'n/a'."""
    v = finite_number(value)
    if v is None:
        return NA
    sign = "-" if v < 0 else ""
    v = abs(v)
    for unit, size in (("TiB", 1 << 40), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if v >= size:
            return f"{sign}{v / size:.{digits}f} {unit}"
    return f"{sign}{int(v)} B"


def fmt_gib(value: int | float | None, digits: int = 1) -> str:
    v = finite_number(value)
    if v is None:
        return NA
    return f"{v / GiB:.{digits}f} GiB"


def fmt_percent(value: int | float | None) -> str:
    v = finite_number(value)
    if v is None:
        return NA
    return f"{v:.0f} %"


def fmt_duration(seconds: float | None) -> str:
    """'45 s', '12 min', '3 h 05 min', '2 d 4 h'."""
    seconds = finite_number(seconds)
    if seconds is None:
        return NA
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def fmt_count(n: int | None, noun: str, plural: str | None = None) -> str:
    """'1 segment', '3 segments'; 'n/a segments' where the count is not known."""
    if n is None:
        return f"{NA} {plural or noun + 's'}"
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
