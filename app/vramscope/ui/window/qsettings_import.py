"""Once: what the window kept with QSettings (before the settings file) into the file.

Earlier versions kept the window's settings in Qt's INI file,
``<config dir>/vramscope/vramscope.conf``. The first start of the window that
finds no settings file (core/settings/user_settings.py) but that INI file copies every
readable value into the settings file; the INI file is left where it is (an
older version may still read it), and is never read again once the settings
file exists. Qt reads it here because only Qt knows its format (``@ByteArray``).
"""

from __future__ import annotations

import logging
import os
import pathlib

from vramscope.core.safe_io import safe_write
from vramscope.core.safe_io.bounded_read import open_regular
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.settings.user_settings import DIAGNOSTICS_TABLE, KEYS, Settings

log = logging.getLogger(__name__)

INI_NAME = "vramscope.conf"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def ini_path(settings: Settings) -> pathlib.Path:
    return settings.path.parent / INI_NAME


def _from_qt(raw, default):
    """A QSettings value (text, mostly) as the type the setting's default has."""
    from PySide6.QtCore import QByteArray

    if isinstance(raw, QByteArray):
        return bytes(raw.data())
    if isinstance(default, bool):
        text = str(raw).strip().lower()
        if text not in _TRUE + _FALSE:
            raise ValueError(f"not a yes/no value: {raw!r}")
        return text in _TRUE
    if isinstance(default, (int, float)):
        return float(raw) if isinstance(default, float) else int(float(raw))
    if isinstance(default, tuple):
        items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
        return tuple(str(x).strip() for x in items if str(x).strip())
    return raw if isinstance(raw, bytes) else str(raw)


def import_qsettings(settings: Settings, ini: str | os.PathLike | None = None) -> int:
    """Copy the QSettings INI file's values into ``settings`` when its file does not
    exist yet; returns how many were copied. Unusable values are skipped with a line."""
    from PySide6.QtCore import QSettings

    ini = pathlib.Path(ini) if ini is not None else ini_path(settings)
    if os.path.lexists(settings.path) or not os.path.lexists(ini):
        return 0
    try:  # QSettings blocks on a FIFO and follows links: look first
        os.close(open_regular(safe_write.target_of(ini)))
    except OSError as exc:  # UnsafeTarget, UnreadableFile
        log.warning("settings: %s is not imported (%s)", ini, exc)
        return 0
    qs = QSettings(str(ini), QSettings.Format.IniFormat)
    copied = 0
    for name, ((table, key), default, _kind) in KEYS.items():
        if qs.contains(f"{table}/{key}"):
            copied += _copy(
                lambda v, n=name: settings.set(n, v), qs.value(f"{table}/{key}"), default, f"{table}/{key}"
            )
    diag: dict[str, object] = {}
    defaults = DiagnosticSettings()
    for field in defaults.__dataclass_fields__:
        qkey = f"{DIAGNOSTICS_TABLE}/{field}"
        if qs.contains(qkey):
            copied += _copy(
                lambda v, f=field: diag.__setitem__(f, v), qs.value(qkey), getattr(defaults, field), qkey
            )
    if diag:
        try:
            settings.update_diagnostics(**diag)
        except ValueError as exc:
            log.warning("settings: the thresholds in %s are not imported (%s)", ini, exc)
            copied -= len(diag)
    if copied:
        log.info("settings: %d values imported from %s into %s", copied, ini, settings.path)
    return copied


def _copy(put, raw, default, where: str) -> int:
    try:
        put(_from_qt(raw, default))
        return 1
    except (TypeError, ValueError, OverflowError) as exc:
        log.warning("settings: %s in the old settings is not imported (%s)", where, exc)
        return 0
