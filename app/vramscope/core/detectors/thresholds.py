"""The thresholds a user tunes, declared once: the command line's options
(``--idle-minutes`` ..., commands/diagnostic_options.py), the settings dialog's
fields (ui/window/settings_dialog.py) and the ``DiagnosticSettings`` field each one sets.
The rest of DiagnosticSettings keeps its values.

Light on imports: command modules read these at parser-build time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.units import MiB

_DEFAULTS = DiagnosticSettings()


@dataclass(frozen=True, slots=True)
class Threshold:
    field: str  # the DiagnosticSettings field it sets
    option: str  # its command-line option
    label: str  # its label in the settings dialog
    unit: str  # what the option and the dialog count in: "MiB", "min", "steps"
    scale: int  # one of those in the field's own unit (MiB -> bytes)
    decimals: int  # the dialog's decimals (0: whole numbers)
    maximum: float  # the dialog's largest value, in ``unit``
    says: str  # what it does, one sentence without its full stop

    @property
    def default(self) -> float:
        """Its default, in ``unit``."""
        value: float = getattr(_DEFAULTS, self.field) / self.scale
        return value

    @property
    def kind(self) -> type:
        """What the option takes: a count in the field's own unit is whole, the rest any number."""
        return int if isinstance(getattr(_DEFAULTS, self.field), int) and self.scale == 1 else float

    @property
    def help(self) -> str:
        """The option's help (argparse: % doubled)."""
        return f"{self.says} (default {self.default:g})".replace("%", "%%")

    @property
    def tooltip(self) -> str:
        return self.says[:1].upper() + self.says[1:] + "."

    def field_value(self, shown: float) -> int | float:
        """The field's value for ``shown`` (in ``unit``): bytes and counts whole."""
        value = shown * self.scale
        return int(round(value)) if isinstance(getattr(_DEFAULTS, self.field), int) else float(value)


def _minutes(field: str, option: str, label: str, says: str) -> Threshold:
    return Threshold(field, option, label, "min", 1, 1, 24 * 60, says)


def _mebibytes(
    field: str, option: str, label: str, says: str, decimals: int = 0, maximum: int = 1 << 20
) -> Threshold:
    return Threshold(field, option, label, "MiB", MiB, decimals, maximum, says)


THRESHOLDS: tuple[Threshold, ...] = (
    _mebibytes(
        "squatter_min_bytes",
        "--squatter-min-mib",
        "Squatter: holds at least",
        "a process idle and holding at least this much is a squatter",
    ),
    _minutes(
        "idle_minutes",
        "--idle-minutes",
        "Squatter: idle for",
        "minutes at 0 % SM before an idle process is flagged",
    ),
    _minutes(
        "kernel_idle_minutes",
        "--kernel-idle-minutes",
        "Jupyter kernel idle for",
        "minutes since its last execution before a Jupyter kernel holding VRAM is listed",
    ),
    _minutes(
        "orphan_idle_minutes",
        "--orphan-idle-minutes",
        "Orphan (parent gone) idle for",
        "minutes idle before a process whose parent is gone is flagged",
    ),
    _mebibytes(
        "unattributed_min_bytes",
        "--unattributed-min-mib",
        "Memory without an owner above",
        "GPU memory no listed process accounts for is flagged above this",
    ),
    Threshold(
        "leak_steps",
        "--leak-steps",
        "Leak: steps in the window",
        "steps",
        1,
        0,
        10_000,
        "optimizer steps a rising allocation must span to count as a leak",
    ),
    _mebibytes(
        "leak_min_slope_bytes",
        "--leak-min-mib-per-step",
        "Leak: growth per step at least",
        "smallest growth per step that counts as a leak",
        decimals=1,
        maximum=1 << 16,
    ),
    _mebibytes(
        "near_oom_free_bytes",
        "--near-oom-free-mib",
        "Near-OOM: free below",
        "free memory below this is near-OOM",
    ),
    _minutes(
        "near_oom_horizon_minutes",
        "--near-oom-horizon-minutes",
        "Near-OOM: fills within",
        "flag when the memory trend reaches capacity within this",
    ),
)


def option_dest(option: str) -> str:
    """argparse's attribute for an option: "--idle-minutes" -> "idle_minutes"."""
    return option.lstrip("-").replace("-", "_")


def threshold_changes(args: Any) -> dict[str, int | float]:
    """The DiagnosticSettings fields the command line's threshold options set."""
    changes = {}
    for t in THRESHOLDS:
        value = getattr(args, option_dest(t.option), None)
        if value is not None:
            changes[t.field] = t.field_value(value)
    return changes
