"""The diagnostics' threshold options (``--idle-minutes`` ...) and what they set; the
parser's side (argparse types, ``--watch``) is commands/diagnostic_options.py.

Light on imports: command modules read these at parser-build time.
"""

from __future__ import annotations

from vramscope.core.units import MiB

# option -> (settings field, type, scale, help)
THRESHOLD_OPTIONS = {
    "--squatter-min-mib": (
        "squatter_min_bytes",
        float,
        MiB,
        "a process idle and holding at least this much is a squatter (default 256)",
    ),
    "--idle-minutes": ("idle_minutes", float, 1, "minutes at 0 %% SM before it is flagged (default 5)"),
    "--kernel-idle-minutes": (
        "kernel_idle_minutes",
        float,
        1,
        "minutes since its last execution before a Jupyter kernel holding VRAM is listed (default 10)",
    ),
    "--orphan-idle-minutes": (
        "orphan_idle_minutes",
        float,
        1,
        "minutes idle before a process whose parent is gone is flagged (default 1)",
    ),
    "--unattributed-min-mib": (
        "unattributed_min_bytes",
        float,
        MiB,
        "GPU memory without a visible owner flagged above this (default 1024)",
    ),
    "--leak-steps": ("leak_steps", int, 1, "optimizer steps a climb must span to be a leak (default 30)"),
    "--leak-min-mib-per-step": (
        "leak_min_slope_bytes",
        float,
        MiB,
        "smallest growth per step that counts as a leak (default 1)",
    ),
    "--near-oom-free-mib": (
        "near_oom_free_bytes",
        float,
        MiB,
        "free memory below this is near-OOM (default 1024)",
    ),
    "--near-oom-horizon-minutes": (
        "near_oom_horizon_minutes",
        float,
        1,
        "flag when the trend fills the GPU within this (default 10)",
    ),
}


def threshold_changes(args) -> dict:
    """The DiagnosticSettings fields the command line's threshold options set."""
    changes = {}
    for flag, (field, kind, scale, _) in THRESHOLD_OPTIONS.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is not None:
            value = value * scale
            changes[field] = int(value) if field.endswith("_bytes") or kind is int else float(value)
    return changes
