"""The live window as a desktop app: its settings survive a restart, the
settings dialog takes effect at once, shortcuts and find work, Help → About."""

from __future__ import annotations

import argparse

import pytest
from PySide6.QtCore import Qt

from vramscope.sources.demo.simulated import SimulatedSource
from vramscope.ui.window.app import build_window
from vramscope.core.settings.user_settings import Settings

from .helpers import save, table_column

T0 = 1_800_000_000.0


@pytest.fixture
def start_app(themed_app, qtbot, tmp_path):
    """start_app(**cli) -> a window as `vramscope --demo ...` builds it, with its
    settings in an INI file that outlives the window (a restart)."""
    path = tmp_path / "settings.toml"
    windows = []

    def start(**cli):
        args = argparse.Namespace(
            demo=True,
            interval=None,
            window=None,
            theme=None,
            record=None,
            read_only=False,
            prometheus=None,
            file=None,
        )
        vars(args).update(cli)
        settings = Settings(str(path))
        settings.merge_args(args)
        source = SimulatedSource(seed=1, start_time=T0)
        feed, window = build_window(args, source=source, start=False, poll_ms=60_000, settings=settings)
        qtbot.addWidget(window)
        window.show()
        for k in range(0, 121):
            feed.sampler.sample_once(T0 + k)
        window.refresh(force=True)
        windows.append(window)
        return window, settings

    yield start
    for w in windows:
        w.services.close()


@pytest.mark.slow
def test_layout_and_choices_are_as_the_user_left_them_after_a_restart(start_app):
    window, settings = start_app()
    window.resize(720, 760)  # the offscreen screen is 800 px wide
    window.splitter.setSizes([500, 250])
    window.save_layout()  # what quitting does
    dialog_settings = settings
    dialog_settings.window = "1h"
    dialog_settings.sync()
    window.close()

    again, settings2 = start_app()
    assert (again.width(), again.height()) == (720, 760)
    assert again.window_key == "1h"
    assert settings2.interval == 1.0


@pytest.mark.slow
def test_command_line_overrides_for_one_run_only(start_app):
    window, settings = start_app(window="1m", interval=0.5)
    assert window.window_key == "1m" and window.feed.interval == 0.5
    window.close()
    again, _ = start_app()
    assert again.window_key == "10m" and again.feed.interval == 1.0


def test_settings_dialog_applies_at_once(start_app, qtbot):
    from vramscope.ui.window.window_setup import open_settings

    window, settings = start_app()
    dialog = open_settings(window, settings)
    dialog.interval.setValue(2.0)
    dialog.window.setCurrentIndex(dialog.window.findData("all"))
    dialog.read_only.setChecked(True)
    dialog.accept()
    assert window.feed.sampler.interval == 2.0
    assert window.window_key == "all"
    assert window.services.actions.read_only and window.services.panels.alerts.read_only


def test_find_and_shortcuts(start_app, qtbot, artifacts_dir):
    window, _ = start_app()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    assert len(table_column(window, "PID")) >= 4
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.find_field.hasFocus()
    qtbot.keyClicks(window.find_field, "ipykernel")
    assert table_column(window, "PID") == ["49718"]
    save(window, artifacts_dir, "main-window-find.png")
    window.find_field.clear()
    window.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_3)
    assert window.window_key == "1h"
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert window.paused


def test_about_names_the_driver_it_sampled(start_app):
    from vramscope.ui.window.window_setup import open_about

    window, _ = start_app()
    dialog = open_about(window)
    assert window.store.latest.driver_version in dialog.text()
