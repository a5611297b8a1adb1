"""The settings dialog edits the settings file every command reads
(core/settings/user_settings.py; its own tests are tests/core/test_user_settings.py); the
window imports what earlier versions kept with QSettings, once; the window starts
whatever lies where the file should be."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtCore import QByteArray, QSettings

from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.units import GiB, MiB
from vramscope.core.settings.user_settings import Settings
from vramscope.ui.window.qsettings_import import import_qsettings, ini_path


def test_dialog_saves_only_what_the_user_changed(tmp_path, qtbot):
    from vramscope.ui.window.settings_dialog import SettingsDialog

    path = tmp_path / "settings.toml"
    s = Settings(path)
    s.override(interval=0.2)  # from the command line
    dialog = SettingsDialog(s)
    qtbot.addWidget(dialog)
    assert dialog.interval.value() == pytest.approx(0.2)
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.window.setCurrentIndex(dialog.window.findData("1m"))
    dialog.thresholds["squatter_min_bytes"].setValue(1024)
    dialog.thresholds["idle_minutes"].setValue(7.5)
    dialog.read_only.setChecked(True)
    with qtbot.waitSignal(dialog.applied) as sig:
        dialog.accept()
    assert sig.args[0] == {"theme", "window", "diagnostics", "read_only"}

    text = path.read_text()  # the file `record`, `status` and `stream` read
    assert 'theme = "dark"' in text and f"squatter_min_bytes = {1024 * MiB}" in text
    again = Settings(path)  # a new start of the app
    assert again.theme == "dark" and again.window == "1m" and again.read_only is True
    assert again.diagnostics.squatter_min_bytes == 1024 * MiB
    assert again.diagnostics.idle_minutes == 7.5
    assert again.interval == 1.0  # the command-line value was left alone: not saved


def test_dialog_restore_defaults(tmp_path, qtbot):
    from vramscope.ui.window.settings_dialog import SettingsDialog

    path = tmp_path / "settings.toml"
    s = Settings(path)
    s.interval = 3.0
    s.diagnostics = DiagnosticSettings().with_overrides(leak_steps=99)
    dialog = SettingsDialog(s)
    qtbot.addWidget(dialog)
    dialog.restore_defaults()
    dialog.accept()
    again = Settings(path)  # a new start of the app
    assert again.interval == 1.0 and again.diagnostics == DiagnosticSettings()


def test_the_dialog_offers_each_threshold_the_command_line_takes_in_the_same_words(tmp_path, qtbot, capsys):
    from vramscope.cli import main
    from vramscope.core.detectors.thresholds import THRESHOLDS
    from vramscope.ui.window.settings_dialog import SettingsDialog

    dialog = SettingsDialog(Settings(tmp_path / "settings.toml"))
    qtbot.addWidget(dialog)
    with pytest.raises(SystemExit):
        main(["status", "--help"])
    helped = " ".join(capsys.readouterr().out.split()).split("diagnostics:", 1)[1]  # the options' section
    assert set(dialog.thresholds) == {t.field for t in THRESHOLDS}
    for t in THRESHOLDS:
        box = dialog.thresholds[t.field]
        _metavar, option_help = helped.split(t.option + " ", 1)[1].split(" ", 1)
        assert option_help.lower().startswith(box.toolTip().removesuffix(".").lower())
        assert option_help.split(")", 1)[0].endswith(f"(default {box.value():g}")
        assert box.suffix() == " " + t.unit


# -- the QSettings file of earlier versions ----------------------------------------------------


def _old_ini(path, **extra) -> None:
    qs = QSettings(str(path), QSettings.Format.IniFormat)
    qs.setValue("sampling/interval", 0.5)
    qs.setValue("view/window", "1h")
    qs.setValue("view/theme", "light")
    qs.setValue("recording/session_cap_bytes", 5 * GiB)
    qs.setValue("window/geometry", QByteArray(bytes(range(256))))
    qs.setValue("view/hidden_columns", "Host mem,CPU %")
    qs.setValue("view/card_details", True)
    qs.setValue("diagnostics/idle_minutes", 2.5)
    qs.setValue("diagnostics/near_oom_free_bytes", 4 * GiB)
    for key, value in extra.items():
        qs.setValue(key.replace("__", "/"), value)
    qs.sync()


def test_the_old_qsettings_are_imported_once(private_user_dirs):
    s = Settings()
    _old_ini(ini_path(s))
    assert import_qsettings(s) == 9
    again = Settings()  # what every command reads now
    assert (again.interval, again.window, again.theme) == (0.5, "1h", "light")
    assert again.session_cap_bytes == 5 * GiB and again.geometry == bytes(range(256))
    assert again.hidden_columns == ("Host mem", "CPU %") and again.card_details is True
    assert again.diagnostics.idle_minutes == 2.5
    assert again.diagnostics.near_oom_free_bytes == 4 * GiB
    again.theme = "dark"
    assert import_qsettings(Settings()) == 0  # once: the file exists now
    assert Settings().theme == "dark"
    assert ini_path(s).exists()  # left for an older version


def test_unusable_old_values_are_skipped_with_a_line(private_user_dirs, caplog):
    s = Settings()
    _old_ini(ini_path(s), sampling__interval="fast", view__theme="purple", diagnostics__leak_steps="inf")
    assert import_qsettings(s) == 7
    again = Settings()
    assert again.interval == 1.0 and again.theme == "system" and again.window == "1h"
    lines = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(lines) == 3 and all("\n" not in line for line in lines)


def test_an_old_settings_fifo_is_not_opened(private_user_dirs, caplog):
    s = Settings()
    s.path.parent.mkdir(parents=True)
    os.mkfifo(ini_path(s))
    assert import_qsettings(s) == 0  # returns: Qt would block reading it
    assert any("FIFO" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_the_window_starts_with_a_fifo_settings_file_and_infinite_values(tmp_path):
    config = tmp_path / "config" / "vramscope"
    config.mkdir(parents=True)
    os.mkfifo(config / "settings.toml")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "--demo", "--quit-after", "1.5"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "FIFO" in r.stderr and "Traceback" not in r.stderr
    assert [p.name for p in config.iterdir() if p.name.startswith("settings.toml.unusable-")]
    (config / "settings.toml").write_text("[sampling]\ninterval = inf\n[diagnostics]\nidle_minutes = nan\n")
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "--demo", "--quit-after", "1.5"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
