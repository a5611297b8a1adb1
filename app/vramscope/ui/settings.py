"""The user's settings, kept with QSettings (organisation and app "vramscope").

    settings = Settings()                      # ~/.config/vramscope/vramscope.conf
    settings.merge_args(args)                  # command-line values win, for this run only
    feed = Pipeline(source, interval=settings.interval)
    ...
    settings.geometry = bytes(window.saveGeometry())   # on close
    settings.sync()

Typed properties: ``interval`` (s), ``window`` ("1m"/"10m"/"1h"/"all"),
``diagnostics`` (a DiagnosticSettings), ``read_only``, ``theme``
("system"/"light"/"dark"), ``geometry`` / ``window_state`` / ``splitter_state``
(bytes or None), ``recording`` and ``session_cap_bytes``; what the window remembers of
its view: ``hidden_columns`` (process table), ``plot_style`` ("stacked"/"lines"),
``card_details`` (GPU cards expanded).

A value given on the command line is an *override*: reading the property
gives it, but it is never written, so the next start without the option
finds the saved value again. Setting a property (the settings dialog) saves
it and drops the override, because the user just chose it.

A stored value that cannot be read (edited by hand, an older version) is
logged and the default is used; the file is left as it is until the user
saves a new value -- nothing is lost silently.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import math
import os
import pathlib
import shutil
import tempfile

from PySide6.QtCore import QByteArray, QSettings

from vramscope.core import safe_write
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.sampler import MAX_INTERVAL, MIN_INTERVAL
from vramscope.core.session.library import DEFAULT_MAX_BYTES
from vramscope.core.view_options import (  # noqa: F401 (the defaults, for callers)
    DEFAULT_PLOT_STYLE, DEFAULT_THEME, DEFAULT_WINDOW, PlotStyle, Theme, TimeWindow,
)

log = logging.getLogger(__name__)

ORGANISATION = "vramscope"
APPLICATION = "vramscope"

INTERVAL_RANGE = (MIN_INTERVAL, MAX_INTERVAL)  # seconds, as `vramscope --interval`
WINDOWS = tuple(TimeWindow)  # as `vramscope --window` and the toolbar
THEMES = tuple(Theme)
DEFAULT_INTERVAL = 1.0
DEFAULT_SESSION_CAP = DEFAULT_MAX_BYTES
DIAGNOSTICS_GROUP = "diagnostics/"

# key -> (default, kind); kind converts a stored value and checks it
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _as_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"not a yes/no value: {value!r}")


def _as_interval(value) -> float:
    v = _finite(value)
    lo, hi = INTERVAL_RANGE
    if not lo <= v <= hi:
        raise ValueError(f"{v:g} s is outside {lo:g} .. {hi:g} s")
    return v


def _choice(options):
    def parse(value) -> str:
        text = str(value)
        if text not in options:
            raise ValueError(f"{text!r} is not one of {', '.join(options)}")
        return text
    return parse


MAX_NUMBER = 1e12  # larger than any threshold means anything (1e400 reads as inf)


def _finite(value) -> float:
    """A number as float, refused when NaN, infinite or beyond MAX_NUMBER."""
    v = float(value)
    if not math.isfinite(v) or abs(v) > MAX_NUMBER:
        raise ValueError(f"{value!r} is not a usable number")
    return v


def _as_cap(value) -> int:
    v = float(value)
    if not math.isfinite(v) or v <= 0 or v > 1 << 62:
        raise ValueError(f"the session cap must be a positive number of bytes (got {value!r})")
    return int(v)


def _as_bytes(value) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, QByteArray):
        return bytes(value.data())
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise ValueError(f"not binary data: {type(value).__name__}")


def _as_names(value) -> tuple[str, ...]:
    """A list of names: QSettings gives a list, or one string for a single name."""
    if value is None or value == "":
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(str(x).strip() for x in items if str(x).strip())


PLOT_STYLES = tuple(PlotStyle)  # the GPU timelines: processes stacked, or one line each

_KEYS = {
    "interval": ("sampling/interval", DEFAULT_INTERVAL, _as_interval),
    "window": ("view/window", DEFAULT_WINDOW, _choice(WINDOWS)),
    "read_only": ("actions/read_only", False, _as_bool),
    "theme": ("view/theme", DEFAULT_THEME, _choice(THEMES)),
    "recording": ("recording/enabled", True, _as_bool),  # on by default (real GPUs)
    "session_cap_bytes": ("recording/session_cap_bytes", DEFAULT_SESSION_CAP, _as_cap),
    "geometry": ("window/geometry", None, _as_bytes),
    "window_state": ("window/state", None, _as_bytes),
    "splitter_state": ("window/splitter", None, _as_bytes),
    "hidden_columns": ("view/hidden_columns", (), _as_names),
    "plot_style": ("view/plot_style", DEFAULT_PLOT_STYLE, _choice(PLOT_STYLES)),
    "card_details": ("view/card_details", False, _as_bool),
}


def _diagnostic_kind(default):
    if isinstance(default, bool):
        return _as_bool
    if isinstance(default, int):
        return lambda v: int(_finite(v))
    return _finite


def _stored(value):
    """What goes into QSettings: bytes as QByteArray (INI keeps it as @ByteArray)."""
    if isinstance(value, (bytes, bytearray)):
        return QByteArray(bytes(value))
    if isinstance(value, tuple):  # a list of names: one comma-separated string
        return ",".join(value)
    return value


def settings_file() -> pathlib.Path:
    """Where QSettings(ORGANISATION, APPLICATION) keeps the settings on Linux (Qt's
    GenericConfigLocation: $XDG_CONFIG_HOME, else ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return pathlib.Path(base) / ORGANISATION / f"{APPLICATION}.conf"


def open_qsettings(path: str | os.PathLike | None = None) -> QSettings:
    """The settings file, when it is safe to read and to replace on save; otherwise
    settings kept in memory for this run, with one line saying why.

    QSettings reads the file when it is created -- a FIFO there blocks forever --
    and saves by replacing it: a symlink to a device (``/dev/zero``) would have
    the device node replaced by an INI file. The file (and the organisation-wide
    one QSettings also reads, ``vramscope.conf`` beside the directory) must be
    what core/safe_write.py would write: a regular file, or the user's own link
    to one.
    """
    own = path is None
    path = pathlib.Path(path) if path is not None else settings_file()
    checked = [path, path.parent.parent / f"{ORGANISATION}.conf"] if own else [path]
    try:
        for candidate in checked:
            safe_write.target_of(candidate)
            safe_write.check_parent(candidate)
    except safe_write.UnsafeTarget as exc:
        log.warning("settings: %s; this run keeps its settings in memory", exc)
        scratch = tempfile.mkdtemp(prefix="vramscope-settings-")
        atexit.register(shutil.rmtree, scratch, True)
        return QSettings(os.path.join(scratch, f"{APPLICATION}.conf"), QSettings.Format.IniFormat)
    if own:
        return QSettings(ORGANISATION, APPLICATION)
    return QSettings(str(path), QSettings.Format.IniFormat)


class _Setting:
    """A typed property backed by QSettings, with a one-run override."""

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

    def __init__(self, qsettings: QSettings | None = None, path: str | os.PathLike | None = None):
        """``qsettings`` as given, else the INI file at ``path`` (default: the user's,
        ``settings_file()``) -- checked before Qt opens it (see ``open_qsettings``)."""
        self.qsettings = qsettings if qsettings is not None else open_qsettings(path)
        self._overrides: dict[str, object] = {}
        self._diag_overrides: dict[str, object] = {}

    # -- generic ------------------------------------------------------------------------
    def get(self, name: str):
        if name in self._overrides:
            return self._overrides[name]
        key, default, kind = _KEYS[name]
        return self._read(key, default, kind)

    def set(self, name: str, value) -> None:
        key, _default, kind = _KEYS[name]
        if value is None:
            if _KEYS[name][1] is not None:
                raise ValueError(f"{name} cannot be empty")
            self.qsettings.remove(key)
        else:
            value = kind(value)  # refuse a bad value here, not at the next start
            self.qsettings.setValue(key, _stored(value))
        self._overrides.pop(name, None)

    def saved(self, name: str):
        """The stored value, ignoring this run's override."""
        key, default, kind = _KEYS[name]
        return self._read(key, default, kind)

    def _read(self, key: str, default, kind):
        if not self.qsettings.contains(key):
            return default
        raw = self.qsettings.value(key)
        try:
            return kind(raw)
        except (TypeError, ValueError, OverflowError) as exc:
            log.warning("setting %s in %s is unreadable (%s); using %r",
                        key, self.qsettings.fileName(), exc, default)
            return default

    # -- diagnostics -----------------------------------------------------------------------
    @property
    def diagnostics(self) -> DiagnosticSettings:
        return self.saved_diagnostics().with_overrides(**self._diag_overrides)

    @diagnostics.setter
    def diagnostics(self, value: DiagnosticSettings) -> None:
        defaults = DiagnosticSettings()
        for f in dataclasses.fields(DiagnosticSettings):
            key = DIAGNOSTICS_GROUP + f.name
            v = getattr(value, f.name)
            if v == getattr(defaults, f.name):
                self.qsettings.remove(key)  # defaults stay unwritten: later versions may tune them
            else:
                self.qsettings.setValue(key, v)
        self._diag_overrides.clear()

    def update_diagnostics(self, **changes) -> DiagnosticSettings:
        """Save these thresholds (on top of the saved ones); other one-run
        overrides stay as they are. Returns the diagnostics now in effect."""
        overrides = {k: v for k, v in self._diag_overrides.items() if k not in changes}
        self.diagnostics = self.saved_diagnostics().with_overrides(**changes)
        self._diag_overrides.update(overrides)
        return self.diagnostics

    def saved_diagnostics(self) -> DiagnosticSettings:
        defaults = DiagnosticSettings()
        changes = {}
        for f in dataclasses.fields(DiagnosticSettings):
            default = getattr(defaults, f.name)
            value = self._read(DIAGNOSTICS_GROUP + f.name, default, _diagnostic_kind(default))
            if value != default:
                changes[f.name] = value
        try:
            return defaults.with_overrides(**changes)
        except ValueError as exc:  # a negative threshold written by hand
            log.warning("diagnostic settings in %s are unusable (%s); using the defaults",
                        self.qsettings.fileName(), exc)
            return defaults

    # -- this run only -------------------------------------------------------------------
    def override(self, **values) -> None:
        """Values for this run only (never saved). ``diagnostics`` takes a dict of
        DiagnosticSettings fields. None means "not given" and is ignored."""
        diag = values.pop("diagnostics", None)
        for name, value in values.items():
            if name not in _KEYS:
                raise ValueError(f"unknown setting {name!r}")
            if value is not None:
                self._overrides[name] = _KEYS[name][2](value)
        if diag:
            DiagnosticSettings().with_overrides(**diag)  # refuses unknown names, negatives
            self._diag_overrides.update({k: v for k, v in diag.items() if v is not None})

    def merge_args(self, args) -> dict:
        """Take the command line's values as one-run overrides; returns what was taken.

        Reads ``args.interval``, ``args.window``, ``args.theme``, ``args.read_only``,
        ``args.record`` (False for ``--no-record``) and the diagnostic threshold options (core/detectors/options.py) where
        present. An option the user did not give must be None (or False for
        ``--read-only``) -- a parser default that is a real value would override
        the saved setting on every start.
        """
        from vramscope.core.detectors.options import THRESHOLD_OPTIONS

        taken = {}
        for name in ("interval", "window", "theme"):
            value = getattr(args, name, None)
            if value is not None:
                taken[name] = value
        if getattr(args, "read_only", False):
            taken["read_only"] = True
        if getattr(args, "record", None) is False:  # --no-record
            taken["recording"] = False
        diag = {}
        for flag, (field, kind, scale, _help) in THRESHOLD_OPTIONS.items():
            value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
            if value is not None:
                value = value * scale
                diag[field] = int(value) if field.endswith("_bytes") or kind is int else float(value)
        self.override(**taken, diagnostics=diag)
        if diag:
            taken["diagnostics"] = diag
        return taken

    def overridden(self) -> set[str]:
        """Names whose value this run comes from the command line."""
        return set(self._overrides) | ({"diagnostics"} if self._diag_overrides else set())

    # -- storage --------------------------------------------------------------------------
    def sync(self) -> None:
        """Write to disk now (QSettings also writes on its own, and at exit)."""
        self.qsettings.sync()
        status = self.qsettings.status()
        if status != QSettings.Status.NoError:
            log.warning("could not save the settings to %s (%s)", self.qsettings.fileName(),
                        status.name)

    def reset(self) -> None:
        """Forget every saved setting (the defaults come back); overrides stay."""
        self.qsettings.clear()
