"""The user's settings, one TOML file read by every command (no Qt).

    settings = Settings()                      # <config dir>/vramscope/settings.toml
    settings.merge_args(args)                  # command-line values win, for this run only
    monitor = build_monitor(source, diagnostics=settings.diagnostics, ...)
    settings.geometry = bytes(window.saveGeometry())   # the window, on close

The window, `record`, `status` and `stream` read the same file, so the same
machine raises the same alerts in each (DESIGN.md "Shape"). Typed properties:
``interval`` (s), ``window`` ("1m"/"10m"/"1h"/"all"), ``diagnostics`` (a
DiagnosticSettings), ``read_only``, ``theme`` ("system"/"light"/"dark"),
``geometry`` / ``window_state`` / ``splitter_state`` (bytes or None, kept as
base64 text), ``recording`` and ``session_cap_bytes``; what the window remembers
of its view: ``hidden_columns`` (process table), ``plot_style``
("stacked"/"lines"), ``card_details`` (GPU cards expanded).

A value given on the command line is an *override*: reading the property
gives it, but it is never written, so the next start without the option
finds the saved value again. Setting a property (the settings dialog) saves
it at once and drops the override, because the user just chose it.

A file that cannot be used at all (core/settings/settings_file.py) is put aside with one
line and the defaults apply. A value that cannot be used (a string where a
number belongs, NaN, a theme that does not exist) gets one line and its
default; the file as it was is put aside and the usable values written back, so
that every command sees the same settings and nothing is lost silently. Where
the file cannot be written, the settings of this run are kept in memory.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pathlib

from vramscope.core.settings import settings_file
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.flow.sampler import DEFAULT_INTERVAL
from vramscope.core.session.library import DEFAULT_MAX_BYTES
from vramscope.core.settings.setting_values import (  # noqa: F401 (INTERVAL_RANGE: for the dialog)
    INTERVAL_RANGE,
    as_bool,
    as_bytes,
    as_cap,
    as_interval,
    as_names,
    choice,
    diagnostic_kind,
    in_file,
)
from vramscope.core.settings.view_options import (  # noqa: F401 (the defaults, for callers)
    DEFAULT_PLOT_STYLE,
    DEFAULT_THEME,
    DEFAULT_WINDOW,
    PlotStyle,
    Theme,
    TimeWindow,
)

log = logging.getLogger(__name__)

WINDOWS = tuple(TimeWindow)  # as `vramscope --window` and the toolbar
THEMES = tuple(Theme)
PLOT_STYLES = tuple(PlotStyle)  # the GPU timelines: processes stacked, or one line each
DEFAULT_SESSION_CAP = DEFAULT_MAX_BYTES
DIAGNOSTICS_TABLE = "diagnostics"
# name -> ((table, key), default, kind); kind checks a value (from the file, a dialog, a flag)
KEYS = {
    "interval": (("sampling", "interval"), DEFAULT_INTERVAL, as_interval),
    "window": (("view", "window"), DEFAULT_WINDOW, choice(WINDOWS)),
    "read_only": (("actions", "read_only"), False, as_bool),
    "theme": (("view", "theme"), DEFAULT_THEME, choice(THEMES)),
    "recording": (("recording", "enabled"), True, as_bool),  # on by default (real GPUs)
    "session_cap_bytes": (("recording", "session_cap_bytes"), DEFAULT_SESSION_CAP, as_cap),
    "geometry": (("window", "geometry"), None, as_bytes),
    "window_state": (("window", "state"), None, as_bytes),
    "splitter_state": (("window", "splitter"), None, as_bytes),
    "hidden_columns": (("view", "hidden_columns"), (), as_names),
    "plot_style": (("view", "plot_style"), DEFAULT_PLOT_STYLE, choice(PLOT_STYLES)),
    "card_details": (("view", "card_details"), False, as_bool),
}


class _Setting:
    """A typed property backed by the file, with a one-run override."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return obj.get(self.name)

    def __set__(self, obj, value) -> None:
        obj.set(self.name, value)


class Settings:
    interval: float = _Setting("interval")
    window: str = _Setting("window")
    read_only: bool = _Setting("read_only")
    theme: str = _Setting("theme")
    recording: bool = _Setting("recording")
    session_cap_bytes: int = _Setting("session_cap_bytes")
    geometry: bytes | None = _Setting("geometry")
    window_state: bytes | None = _Setting("window_state")
    splitter_state: bytes | None = _Setting("splitter_state")
    hidden_columns: tuple[str, ...] = _Setting("hidden_columns")
    plot_style: str = _Setting("plot_style")
    card_details: bool = _Setting("card_details")

    def __init__(self, path: str | os.PathLike | None = None):
        """The settings in the TOML file at ``path`` (default: the user's, in the
        config dir), read once now; unusable parts said in one line each."""
        self.path = pathlib.Path(path) if path is not None else settings_file.default_path()
        self._overrides: dict[str, object] = {}
        self._diag_overrides: dict[str, object] = {}
        self.in_memory = False  # True once a write failed: this run keeps its settings
        self._values: dict[str, object] = {}  # name -> checked value, as saved
        self._diag: dict[str, object] = {}  # DiagnosticSettings field -> checked value
        self._load()

    # -- reading ---------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            tables = settings_file.read(self.path)
        except settings_file.SettingsFileError as exc:
            log.warning("%s", exc)
            return
        bad = [
            f"{table}: not a table"
            for table in _TABLES
            if table in tables and not isinstance(tables[table], dict)
        ]
        for name, ((table, key), _default, kind) in KEYS.items():
            if _has(tables, table, key):
                value = self._checked(tables[table][key], kind, f"{table}.{key}", bad)
                if value is not None:
                    self._values[name] = value
        diag = tables.get(DIAGNOSTICS_TABLE)
        defaults = DiagnosticSettings()
        for f in dataclasses.fields(DiagnosticSettings):
            if isinstance(diag, dict) and f.name in diag:
                value = self._checked(
                    diag[f.name],
                    diagnostic_kind(getattr(defaults, f.name)),
                    f"{DIAGNOSTICS_TABLE}.{f.name}",
                    bad,
                )
                if value is not None:
                    self._diag[f.name] = value
        try:
            defaults.with_overrides(**self._diag)
        except ValueError as exc:  # a negative threshold written by hand
            bad.append(f"{DIAGNOSTICS_TABLE}: {exc}")
            self._diag = {}
        if bad:  # the file as it was goes aside; every command then reads the usable rest
            kept = settings_file.put_aside(self.path)
            log.warning(
                "settings in %s are unusable (%s); using the defaults for them; the file %s",
                self.path,
                "; ".join(bad)[:300],
                kept,
            )
            self._save(KEYS, diagnostics=True)

    @staticmethod
    def _checked(raw, kind, where: str, bad: list):
        try:
            return kind(raw)
        except (TypeError, ValueError, OverflowError) as exc:
            bad.append(f"{where}: {exc}")
            return None

    # -- generic ---------------------------------------------------------------------------
    def get(self, name: str):
        if name in self._overrides:
            return self._overrides[name]
        return self.saved(name)

    def set(self, name: str, value) -> None:
        _key, default, kind = KEYS[name]
        if value is None:
            if default is not None:
                raise ValueError(f"{name} cannot be empty")
            self._values.pop(name, None)
        else:
            self._values[name] = kind(value)  # refuse a bad value here, not at the next start
        self._overrides.pop(name, None)
        self._save([name])

    def saved(self, name: str):
        """The stored value, ignoring this run's override."""
        return self._values.get(name, KEYS[name][1])

    # -- diagnostics -------------------------------------------------------------------------
    @property
    def diagnostics(self) -> DiagnosticSettings:
        return self.saved_diagnostics().with_overrides(**self._diag_overrides)

    @diagnostics.setter
    def diagnostics(self, value: DiagnosticSettings) -> None:
        defaults = DiagnosticSettings()
        # defaults stay unwritten: later versions may tune them
        self._diag = {
            f.name: diagnostic_kind(getattr(defaults, f.name))(getattr(value, f.name))
            for f in dataclasses.fields(DiagnosticSettings)
            if getattr(value, f.name) != getattr(defaults, f.name)
        }
        self._diag_overrides.clear()
        self._save(diagnostics=True)

    def update_diagnostics(self, **changes) -> DiagnosticSettings:
        """Save these thresholds (on top of the saved ones); other one-run
        overrides stay as they are. Returns the diagnostics now in effect."""
        overrides = {k: v for k, v in self._diag_overrides.items() if k not in changes}
        self.diagnostics = self.saved_diagnostics().with_overrides(**changes)
        self._diag_overrides.update(overrides)
        return self.diagnostics

    def saved_diagnostics(self) -> DiagnosticSettings:
        return DiagnosticSettings().with_overrides(**self._diag)

    # -- this run only ---------------------------------------------------------------------
    def override(self, **values) -> None:
        """Values for this run only (never saved). ``diagnostics`` takes a dict of
        DiagnosticSettings fields. None means "not given" and is ignored."""
        diag = values.pop("diagnostics", None)
        for name, value in values.items():
            if name not in KEYS:
                raise ValueError(f"unknown setting {name!r}")
            if value is not None:
                self._overrides[name] = KEYS[name][2](value)
        if diag:
            DiagnosticSettings().with_overrides(**diag)  # refuses unknown names, negatives
            self._diag_overrides.update({k: v for k, v in diag.items() if v is not None})

    def merge_args(self, args) -> dict:
        """Take the command line's values as one-run overrides; returns what was taken.

        Reads ``args.interval``, ``args.window``, ``args.theme``, ``args.read_only``,
        ``args.record`` (False for ``--no-record``) and the diagnostic threshold options
        (core/detectors/thresholds.py) where present. An option the user did not give must
        be None (or False for ``--read-only``) -- a parser default that is a real value
        would override the saved setting on every start.
        """
        from vramscope.core.detectors.thresholds import threshold_changes

        taken = {}
        for name in ("interval", "window", "theme"):
            value = getattr(args, name, None)
            if value is not None:
                taken[name] = value
        if getattr(args, "read_only", False):
            taken["read_only"] = True
        if getattr(args, "record", None) is False:  # --no-record
            taken["recording"] = False
        diag = threshold_changes(args)
        self.override(**taken, diagnostics=diag)
        if diag:
            taken["diagnostics"] = diag
        return taken

    def overridden(self) -> set[str]:
        """Names whose value this run comes from the command line."""
        return set(self._overrides) | ({"diagnostics"} if self._diag_overrides else set())

    # -- storage ---------------------------------------------------------------------------
    def _save(self, names=(), diagnostics: bool = False) -> None:
        """Write what this run changed (``names``, the thresholds) over the file as it is
        now: what another process or the user changed since is kept, and so are keys
        this version does not know (a newer one's)."""
        if self.in_memory:
            return
        try:
            try:
                tables = settings_file.read(self.path)
            except settings_file.SettingsFileError as exc:  # put aside, said: start afresh
                log.warning("%s", exc)
                tables = {}
            for name in names:
                (table, key), _default, _kind = KEYS[name]
                if not isinstance(tables.get(table), dict):
                    tables[table] = {}
                if name in self._values:
                    tables[table][key] = in_file(self._values[name])
                else:
                    tables[table].pop(key, None)
            if diagnostics:
                tables[DIAGNOSTICS_TABLE] = dict(self._diag)
            settings_file.write(self.path, {t: v for t, v in tables.items() if v != {}})
        except settings_file.TooLarge as exc:  # (keys of a newer version, grown by the rewrite)
            log.warning("settings: not saved to %s (%s); the file is left as it was", self.path, exc)
        except OSError as exc:  # UnsafeTarget included: a FIFO, another user's file
            self.in_memory = True
            log.warning(
                "settings: cannot save to %s (%s); this run keeps its settings in memory",
                self.path,
                " ".join(str(exc).split())[:200],
            )

    def sync(self) -> None:
        """Every change is written when it is made; kept for callers that flush at exit."""

    def reset(self) -> None:
        """Forget every saved setting (the defaults come back); overrides stay."""
        self._values.clear()
        self._diag.clear()
        self._save(KEYS, diagnostics=True)


_TABLES = {table for (table, _key), _default, _kind in KEYS.values()} | {DIAGNOSTICS_TABLE}


def _has(tables: dict, table: str, key: str) -> bool:
    return isinstance(tables.get(table), dict) and key in tables[table]


def diagnostics_for(args=None, path: str | os.PathLike | None = None) -> DiagnosticSettings:
    """The thresholds a command runs with: the user's settings file, then the command
    line's threshold options (``status --idle-minutes`` ...) for this run."""
    settings = Settings(path)
    if args is not None:
        settings.merge_args(args)
    return settings.diagnostics
