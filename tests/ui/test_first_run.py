"""First run without a display: one line and exit 2, never a Qt abort."""

from __future__ import annotations

import os
import subprocess
import sys

from vramscope.commands.gui import display_missing


def test_without_a_display_the_window_says_so_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "vramscope.cli", "--demo"], env=env, capture_output=True, text=True, timeout=60
    )
    if not sys.platform.startswith("linux"):
        return
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no display" in lines[0] and "vramscope status" in lines[0]
    assert "qt.qpa" not in done.stderr and "xcb" not in done.stderr


def test_a_display_or_a_chosen_qt_platform_is_enough():
    assert display_missing({}, "linux")
    assert not display_missing({"DISPLAY": ":0"}, "linux")
    assert not display_missing({"WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert not display_missing({"QT_QPA_PLATFORM": "offscreen"}, "linux")
    assert not display_missing({}, "darwin")
