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


# -- a settings file that is not a regular file, values that are not numbers ------------------

def _open_in_time(path) -> Settings:
    """Settings(path=...) on a thread: a hang fails the test instead of the suite."""
    import threading
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("s", Settings(path=path)), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "opening the settings hung"
    return out["s"]


def test_a_fifo_as_the_settings_file_keeps_settings_in_memory(tmp_path, caplog):
    import os
    import stat
    fifo = tmp_path / "vramscope.conf"
    os.mkfifo(fifo)
    s = _open_in_time(fifo)
    assert s.interval == 1.0  # the defaults
    s.interval = 2.0
    s.sync()
    assert s.interval == 2.0  # kept for this run
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # and the FIFO left alone
    [line] = [r.getMessage() for r in caplog.records if "in memory" in r.getMessage()]
    assert "FIFO" in line and str(fifo) in line


def test_a_settings_link_to_a_device_never_replaces_the_device(tmp_path, caplog):
    import os
    import stat
    if os.geteuid() != 0:
        pytest.skip("making a device node (a copy of /dev/zero) needs root")
    device = tmp_path / "zero"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # what /dev/zero is
    link = tmp_path / "vramscope.conf"
    link.symlink_to(device)
    s = _open_in_time(link)
    s.theme = "dark"
    s.sync()
    del s
    assert stat.S_ISCHR(os.stat(device).st_mode) and link.is_symlink()
    assert any("character device" in r.getMessage() and "in memory" in r.getMessage()
               for r in caplog.records)


def test_a_settings_link_to_a_regular_file_is_written_through(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "vramscope.conf"
    real.write_text("")
    link = tmp_path / "vramscope.conf"
    link.symlink_to(real)
    s = Settings(path=link)
    s.theme = "dark"
    s.sync()
    assert link.is_symlink() and "theme=dark" in real.read_text()


@pytest.mark.parametrize("value", ["inf", "-inf", "1e400", "nan", "1e300"])
def test_numbers_that_are_not_usable_give_a_warning_and_the_default(ini, value, caplog):
    ini.path.write_text(f"[sampling]\ninterval={value}\n[recording]\nsession_cap_bytes={value}\n"
                        f"[diagnostics]\nidle_minutes={value}\nleak_steps={value}\n")
    s = ini()
    assert s.interval == 1.0 and s.session_cap_bytes == 2 * GiB
    assert s.diagnostics == DiagnosticSettings()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) >= 3 and all("\n" not in w for w in warnings)


def test_the_window_starts_with_a_fifo_settings_file_and_infinite_values(tmp_path):
    import os
    import subprocess
    import sys
    config = tmp_path / "config" / "vramscope"
    config.mkdir(parents=True)
    os.mkfifo(config / "vramscope.conf")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    r = subprocess.run([sys.executable, "-m", "vramscope", "--demo", "--quit-after", "1.5"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "in memory" in r.stderr and "Traceback" not in r.stderr
    os.unlink(config / "vramscope.conf")
    (config / "vramscope.conf").write_text("[sampling]\ninterval=1e400\n[diagnostics]\nidle_minutes=nan\n")
    r = subprocess.run([sys.executable, "-m", "vramscope", "--demo", "--quit-after", "1.5"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
