"""Command-line options for the diagnostics (``status --watch`` and thresholds).

Light on imports: command modules add these at parser-build time.
"""

from __future__ import annotations

import argparse

from vramscope.core.option_types import interval_seconds, non_negative
from vramscope.core.units import MiB

# option -> (settings field, type, scale, help)
THRESHOLD_OPTIONS = {
    "--squatter-min-mib": ("squatter_min_bytes", float, MiB,
                           "a process idle and holding at least this much is a squatter (default 256)"),
    "--idle-minutes": ("idle_minutes", float, 1, "minutes at 0 %% SM before it is flagged (default 5)"),
    "--kernel-idle-minutes": ("kernel_idle_minutes", float, 1,
                              "minutes since its last execution before a Jupyter kernel holding VRAM is listed (default 10)"),
    "--orphan-idle-minutes": ("orphan_idle_minutes", float, 1,
                              "minutes idle before a process whose parent is gone is flagged (default 1)"),
    "--unattributed-min-mib": ("unattributed_min_bytes", float, MiB,
                               "GPU memory without a visible owner flagged above this (default 1024)"),
    "--leak-steps": ("leak_steps", int, 1,
                     "optimizer steps a climb must span to be a leak (default 30)"),
    "--leak-min-mib-per-step": ("leak_min_slope_bytes", float, MiB,
                                "smallest growth per step that counts as a leak (default 1)"),
    "--near-oom-free-mib": ("near_oom_free_bytes", float, MiB,
                            "free memory below this is near-OOM (default 1024)"),
    "--near-oom-horizon-minutes": ("near_oom_horizon_minutes", float, 1,
                                   "flag when the trend fills the GPU within this (default 10)"),
}


def add_diagnostic_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("diagnostics")
    g.add_argument("--watch", type=non_negative(float), default=0.0, metavar="SECONDS",
                   help="sample for this long, printing each sample on a terminal (like "
                        "nvidia-smi -l), so that time-based rules (idle squatters, leaks, "
                        "trends) can fire; --json prints the last one")
    g.add_argument("--interval", type=interval_seconds, default=1.0, metavar="SECONDS",
                   help="seconds between samples with --watch (default 1, 0.1 to 60)")
    for flag, (_, kind, _, help_text) in THRESHOLD_OPTIONS.items():
        g.add_argument(flag, type=non_negative(kind), default=None, help=help_text)


def threshold_changes(args) -> dict:
    """The DiagnosticSettings fields the command line's threshold options set."""
    changes = {}
    for flag, (field, kind, scale, _) in THRESHOLD_OPTIONS.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is not None:
            value = value * scale
            changes[field] = int(value) if field.endswith("_bytes") or kind is int else float(value)
    return changes
