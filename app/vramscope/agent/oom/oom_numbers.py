"""Figures from an OOM event's plain data, which may come from a stranger's file:
a finite number or None, bytes as the monitor prints them (the agent has no
core.units). Standard library only.
"""

from __future__ import annotations

import math

GiB = 1 << 30
MiB = 1 << 20


def fmt(n) -> str:
    """Bytes as the monitor prints them (agent side: no core.units here); "n/a" for
    anything that is not a finite number."""
    n = finite(n)
    if n is None:
        return "n/a"
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def finite(v) -> float | None:
    """A finite number as float, else None (a bool, a string, NaN, an int past float's range)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        v = float(v)
    except OverflowError:
        return None
    return v if math.isfinite(v) else None


def whole(v) -> int | None:
    """A finite number as an int, else None."""
    return None if finite(v) is None else int(v)


def listed(value) -> list:
    """A list or tuple as a list; anything else (a string, a number, a dict) as none."""
    return list(value) if isinstance(value, (list, tuple)) else []
