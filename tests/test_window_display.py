"""A display that is named but cannot show the window: one plain line and exit 2
from the command as installed, never Qt's abort (exit 134, "Reinstalling the
application may fix this problem")."""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import sys

import pytest

from vramscope import window_display

APP = pathlib.Path(__file__).resolve().parents[1] / "app"


def _window(tmp_path, **env_more) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(PYTHONPATH=str(APP), **env_more)
    return subprocess.run(
        [sys.executable, "-m", "vramscope", "--demo", "--quit-after", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Reinstalling" not in done.stderr and "Traceback" not in done.stderr
    assert "vramscope status" in lines[0]
    return lines[0]


def _free_display() -> int:
    return next(n for n in range(90, 200) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))


def test_an_x_display_nobody_serves_is_one_line(tmp_path):
    n = _free_display()
    line = _one_line(_window(tmp_path, DISPLAY=f":{n}"))
    assert f"no X server at DISPLAY=:{n}" in line


def test_a_dead_wayland_socket_is_one_line(tmp_path):
    dead = tmp_path / "wayland-1"
    with socket.socket(socket.AF_UNIX) as s:  # the compositor's socket file, left behind
        s.bind(str(dead))
    line = _one_line(_window(tmp_path, WAYLAND_DISPLAY="wayland-1", XDG_RUNTIME_DIR=str(tmp_path)))
    assert "no Wayland compositor at WAYLAND_DISPLAY=wayland-1" in line


def test_a_platform_chosen_by_hand_is_not_second_guessed():
    assert window_display.display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert window_display.display_problem({"DISPLAY": ":0"}, "darwin") is None
    said = window_display.display_problem({"QT_QPA_PLATFORM": "xcb"}, "linux")
    assert said is not None and "DISPLAY is unset" in said


def test_debian_package_names_follow_the_soname():
    assert window_display.debian_package("libxcb-icccm.so.4") == "libxcb-icccm4"
    assert window_display.debian_package("libxkbcommon-x11.so.0") == "libxkbcommon-x11-0"
    assert window_display.debian_package("libEGL.so.1") == "libegl1"


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_plugin_whose_library_is_missing_names_the_apt_line(tmp_path):
    """A plugin linked against a library that is then removed, as Qt's xcb plugin
    on a server without libxcb-icccm4."""
    (tmp_path / "dep.c").write_text("int vs_dep(void) { return 1; }\n")
    (tmp_path / "plugin.c").write_text("int vs_dep(void);\nint vs_plugin(void) { return vs_dep(); }\n")
    dep = tmp_path / "libvsgone.so.3"
    cc = ["cc", "-shared", "-fPIC"]
    subprocess.run([*cc, "-Wl,-soname,libvsgone.so.3", "-o", str(dep), str(tmp_path / "dep.c")], check=True)
    (tmp_path / "libvsgone.so").symlink_to(dep.name)
    plugin = tmp_path / "libqxcb.so"
    subprocess.run(
        [*cc, "-o", str(plugin), str(tmp_path / "plugin.c"), f"-L{tmp_path}", "-lvsgone"], check=True
    )
    dep.unlink()
    said = window_display.library_problem(window_display.WAYLAND, plugin)
    assert said is not None and "libvsgone.so.3" in said and "sudo apt install libvsgone3" in said


def _real_plugin_lacks_libraries() -> bool:
    plugin = window_display.plugin_path(window_display.X11)
    return plugin is not None and bool(window_display.missing_libraries(plugin))


@pytest.mark.skipif(not _real_plugin_lacks_libraries(), reason="Qt's xcb plugin loads here")
def test_missing_xcb_libraries_on_a_reachable_display_give_the_apt_line(tmp_path):
    n = _free_display()
    with socket.socket(socket.AF_UNIX) as server:  # an X server's socket (abstract namespace)
        server.bind(f"\0/tmp/.X11-unix/X{n}")
        server.listen(4)
        line = _one_line(_window(tmp_path, DISPLAY=f":{n}"))
    assert "Qt's X11 plugin needs" in line and "sudo apt install libxcb-" in line
