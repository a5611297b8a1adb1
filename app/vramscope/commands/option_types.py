"""Command-line value types, one definition for every command (argparse ``type=``).

Each refuses what would make a command misbehave -- NaN and infinities
(``float("nan")`` compares false with everything, so range checks let it
through and a loop on it never ends), negatives where a count or a cap is
meant, numbers outside a range -- with a one-line reason argparse prints
before exiting with status 2.
"""

from __future__ import annotations

import argparse
import math

from vramscope.core.flow.sampler import MAX_INTERVAL, MIN_INTERVAL


def number(text: str, kind=float, what: str = "a number"):
    """``kind(text)``, finite; ArgumentTypeError otherwise."""
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not {what}: {text!r} (must be finite)")
    return value


def seconds(low: float | None = None, high: float | None = None):
    """A finite number of seconds, > 0 and within [low, high] where given."""

    def convert(text: str) -> float:
        value = number(text, float, "a number of seconds")
        if value <= 0 or (low is not None and value < low) or (high is not None and value > high):
            where = f"outside {low:g} .. {high:g} s" if low is not None else "not > 0"
            raise argparse.ArgumentTypeError(f"{text} s is {where}")
        return value

    convert.__name__ = "seconds"
    return convert


def non_negative(kind=float):
    """A finite number >= 0 (durations to watch, thresholds)."""

    def convert(text: str):
        value = number(text, kind)
        if value < 0:
            raise argparse.ArgumentTypeError(f"must not be negative: {text}")
        return value

    convert.__name__ = kind.__name__
    return convert


def positive(kind=float):
    """A finite number > 0 (caps, where 0 or less would remove everything)."""

    def convert(text: str):
        value = number(text, kind)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than 0: {text}")
        return value

    convert.__name__ = kind.__name__
    return convert


def address(text: str) -> str:
    """HOST:PORT for the Prometheus endpoint, checked now rather than at bind time."""
    from vramscope.core.export.metrics import parse_address

    try:
        parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


interval_seconds = seconds(MIN_INTERVAL, MAX_INTERVAL)
