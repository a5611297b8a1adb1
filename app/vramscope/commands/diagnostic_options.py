"""The diagnostics' command-line options: ``status --watch``, ``--interval`` and the
thresholds (core/detectors/thresholds.py declares them and the setting each one sets)."""

from __future__ import annotations

import argparse

from vramscope.commands.option_types import interval_seconds, non_negative
from vramscope.core.detectors.thresholds import THRESHOLDS


def add_diagnostic_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("diagnostics")
    g.add_argument(
        "--watch",
        type=non_negative(float),
        default=0.0,
        metavar="SECONDS",
        help="sample for this long, printing each sample on a terminal (like "
        "nvidia-smi -l), so that time-based rules (idle squatters, leaks, "
        "trends) can fire; --json prints the last one",
    )
    g.add_argument(
        "--interval",
        type=interval_seconds,
        default=1.0,
        metavar="SECONDS",
        help="seconds between samples with --watch (default 1, 0.1 to 60)",
    )
    for t in THRESHOLDS:
        g.add_argument(t.option, type=non_negative(t.kind), default=None, help=t.help)
