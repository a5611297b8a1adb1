"""Settings survive a restart (a real INI file through QSettings); the command
line changes one run only; the dialog saves what the user changed."""

from __future__ import annotations

import argparse

import pytest
from PySide6.QtCore import QSettings

from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.units import GiB, MiB
from vramscope.ui.settings import Settings


@pytest.fixture
def ini(tmp_path):
    path = tmp_path / "vramscope.conf"

    def open_settings() -> Settings:  # a fresh QSettings each time: a new start of the app
        return Settings(QSettings(str(path), QSettings.Format.IniFormat))

    open_settings.path = path
    return open_settings


def test_defaults_on_first_start(ini):
    s = ini()
    assert s.interval == 1.0 and s.window == "10m" and s.theme == "system"
    assert s.read_only is False and s.recording is True  # recording is on by default (issue 5)
    assert s.session_cap_bytes == 2 * GiB
    assert s.geometry is None and s.splitter_state is None
    assert s.diagnostics == DiagnosticSettings()


def test_round_trip_through_the_ini_file(ini):
    s = ini()
    s.interval = 0.5
    s.window = "1h"
    s.theme = "light"
    s.read_only = True
    s.recording = True
    s.session_cap_bytes = 5 * GiB
    geometry = bytes(range(256)) + b"\x00\xff"
    s.geometry = geometry
    s.splitter_state = b"\x00\x00\x00\xff\x00"
    s.diagnostics = DiagnosticSettings().with_overrides(
        squatter_min_bytes=512 * MiB, idle_minutes=2.5, leak_steps=40, lookup_notebooks=False)
    s.sync()
    del s

    text = ini.path.read_text()
    assert "interval=0.5" in text and "theme=light" in text

    again = ini()
    assert again.interval == 0.5
    assert again.window == "1h"
    assert again.theme == "light"
    assert again.read_only is True and again.recording is True
    assert again.session_cap_bytes == 5 * GiB
    assert again.geometry == geometry
    assert again.splitter_state == b"\x00\x00\x00\xff\x00"
    d = again.diagnostics
    assert (d.squatter_min_bytes, d.idle_minutes, d.leak_steps, d.lookup_notebooks) == \
        (512 * MiB, 2.5, 40, False)
    assert d.near_oom_free_bytes == DiagnosticSettings().near_oom_free_bytes


def test_command_line_overrides_one_run_and_is_not_saved(ini):
    s = ini()
    s.interval = 2.0
    s.window = "1h"
    s.recording = True
    s.sync()
    args = argparse.Namespace(interval=0.2, window=None, theme="dark", read_only=True,
                              record=False, squatter_min_mib=100.0, leak_steps=None)
    taken = s.merge_args(args)
    assert taken["interval"] == 0.2 and "window" not in taken
    assert s.interval == 0.2 and s.window == "1h"  # not given: the saved value
    assert s.theme == "dark" and s.read_only is True and s.recording is False
    assert s.diagnostics.squatter_min_bytes == 100 * MiB
    assert s.overridden() == {"interval", "theme", "read_only", "recording", "diagnostics"}
    s.sync()
    del s

    again = ini()
    assert again.interval == 2.0 and again.theme == "system" and again.read_only is False
    assert again.recording is True
    assert again.diagnostics.squatter_min_bytes == DiagnosticSettings().squatter_min_bytes


def test_setting_a_value_during_the_run_saves_it_and_drops_the_override(ini):
    s = ini()
    s.override(interval=0.2)
    s.interval = 5.0
    assert s.interval == 5.0 and "interval" not in s.overridden()
    s.sync()
    assert ini().interval == 5.0


def test_unreadable_values_fall_back_to_defaults_and_stay_in_the_file(ini):
    ini.path.write_text("[sampling]\ninterval=fast\n[view]\ntheme=purple\nwindow=1h\n"
                        "[diagnostics]\nidle_minutes=-3\n")
    s = ini()
    assert s.interval == 1.0 and s.theme == "system"
    assert s.window == "1h"  # the readable ones still count
    assert s.diagnostics == DiagnosticSettings()
    assert "interval=fast" in ini.path.read_text()  # nothing lost until the user saves


def test_bad_values_are_refused_with_a_clear_message(ini):
    s = ini()
    with pytest.raises(ValueError, match="outside 0.1 .. 60"):
        s.interval = 0.01
    with pytest.raises(ValueError, match="not one of system, light, dark"):
        s.theme = "blue"
    with pytest.raises(ValueError, match="unknown diagnostic setting"):
        s.override(diagnostics={"nonsense": 1})
    assert s.interval == 1.0


def test_dialog_saves_only_what_the_user_changed(ini, qtbot):
    from vramscope.ui.settings_dialog import SettingsDialog

    s = ini()
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

    again = ini()
    assert again.theme == "dark" and again.window == "1m" and again.read_only is True
    assert again.diagnostics.squatter_min_bytes == 1024 * MiB
    assert again.diagnostics.idle_minutes == 7.5
    assert again.interval == 1.0  # the command-line value was left alone: not saved


def test_dialog_restore_defaults(ini, qtbot):
    from vramscope.ui.settings_dialog import SettingsDialog

    s = ini()
    s.interval = 3.0
    s.diagnostics = DiagnosticSettings().with_overrides(leak_steps=99)
    dialog = SettingsDialog(s)
    qtbot.addWidget(dialog)
    dialog.restore_defaults()
    dialog.accept()
    again = ini()
    assert again.interval == 1.0 and again.diagnostics == DiagnosticSettings()
