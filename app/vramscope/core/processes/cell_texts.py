"""The texts of the process table's figures: host memory, growth, SM %.

Qt-free; the table (core/processes/process_rows.py) and ``status`` read them from here.
"""

from __future__ import annotations

from vramscope.core.units import NA, GiB, MiB, fmt_gib

BUSIEST = "max"  # a group's SM %: its busiest process's, so labelled


def host_memory_text(value: int | None) -> str:
    """'2.9 GiB'; '52 MiB' under 0.1 GiB (never '0.0 GiB')."""
    if value is not None and value < GiB // 10:
        return f"{value / MiB:.0f} MiB"
    return fmt_gib(value, 1)


def growth_text(mib_per_min: float | None) -> str:
    if mib_per_min is None:
        return NA
    if abs(mib_per_min) < 0.05:
        return "0"
    digits = 0 if abs(mib_per_min) >= 10 else 1
    return f"{mib_per_min:+.{digits}f} MiB/min"


def sm_text(row) -> str:
    """'55'; a group's row 'max 55' (its members' shares of possibly different GPUs
    do not add up: 4 x 100 % would read 400 %); n/a when NVML gave no figure."""
    if row.sm is None:
        return NA
    return f"{BUSIEST} {row.sm}" if row.members else f"{row.sm}"
