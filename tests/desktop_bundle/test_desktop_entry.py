"""`vramscope desktop install`: the menu entry and icons land in the user's
XDG_DATA_HOME, start this vramscope, and go away again on uninstall."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from vramscope import desktop_entry as de

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
SHIPPED_ENTRY = PACKAGING / de.DESKTOP_FILE
METAINFO = PACKAGING / f"{de.APP_ID}.metainfo.xml"


@pytest.fixture
def xdg(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "share"), "HOME": str(tmp_path / "home")}
    return env, tmp_path / "share"


def test_install_writes_entry_and_every_icon_size(xdg):
    env, share = xdg
    written = de.install(["/opt/vramscope/vramscope"], env=env, refresh_caches=False)
    entry = share / "applications" / "io.github.vramscope.Vramscope.desktop"
    assert entry in written and entry.is_file()
    keys = de.parse_entry(entry.read_text())
    assert keys["Type"] == "Application"
    assert keys["Categories"] == "System;Monitor;"
    assert keys["Exec"] == "/opt/vramscope/vramscope %f"
    assert keys["TryExec"] == "/opt/vramscope/vramscope"
    assert keys["Icon"] == "vramscope"
    assert keys["Terminal"] == "false"
    # the window class Qt gives the window: argv[0]'s name (X11 WM_CLASS instance)
    assert keys["StartupWMClass"] == "vramscope" == pathlib.Path(keys["TryExec"]).name
    shipped = sorted(p.name for p in (ROOT / "resources" / "icons").glob("vramscope-*.png"))
    hicolor = share / "icons" / "hicolor"
    for name in shipped:
        size = name.removeprefix("vramscope-").removesuffix(".png")
        icon = hicolor / f"{size}x{size}" / "apps" / "vramscope.png"
        assert icon.read_bytes() == (ROOT / "resources" / "icons" / name).read_bytes()
    assert (hicolor / "scalable" / "apps" / "vramscope.svg").read_text().lstrip().startswith("<")
    assert len(shipped) >= 5
    mime = share / "mime" / "packages" / "io.github.vramscope.Vramscope.xml"
    assert 'glob pattern="*.vramscope"' in mime.read_text()
    assert "application/x-vramscope-session;" == keys["MimeType"]
    # nothing outside XDG_DATA_HOME
    assert not (pathlib.Path(env["HOME"])).exists()


def test_uninstall_removes_what_install_wrote_and_nothing_else(xdg):
    env, share = xdg
    other = share / "icons" / "hicolor" / "48x48" / "apps" / "someone-else.png"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"png")
    written = de.install(["/opt/v/vramscope"], env=env, refresh_caches=False)
    removed = de.uninstall(env=env, refresh_caches=False)
    assert sorted(removed) == sorted(written)
    assert not any(p.exists() for p in written)
    assert other.read_bytes() == b"png"
    assert de.uninstall(env=env, refresh_caches=False) == []


def test_data_home_follows_xdg_and_ignores_a_relative_one(tmp_path):
    assert de.data_home({"XDG_DATA_HOME": str(tmp_path), "HOME": "/h"}) == tmp_path
    assert de.data_home({"XDG_DATA_HOME": "rel/path", "HOME": "/h"}) == pathlib.Path("/h/.local/share")
    assert de.data_home({"HOME": "/h"}) == pathlib.Path("/h/.local/share")


def test_exec_quotes_paths_with_spaces_and_specials():
    keys = de.parse_entry(de.render(["/home/a b/My Apps/vramscope", "--demo"]))
    assert keys["Exec"] == '"/home/a b/My Apps/vramscope" --demo %f'
    keys = de.parse_entry(de.render(["/x/100%/vramscope"]))
    assert keys["Exec"].startswith('"/x/100%%/vramscope"')
    keys = de.parse_entry(de.render(["/x/$HOME/vramscope"]))
    assert keys["Exec"].startswith(r'"/x/\\$HOME/vramscope"')
    with pytest.raises(ValueError, match="must not contain '='"):
        de.render(["/opt/a=b/vramscope"])


def test_default_command_is_this_environments_vramscope():
    cmd = de.default_command()
    assert os.path.isabs(cmd[0])
    if len(cmd) == 1:
        assert pathlib.Path(cmd[0]).name == "vramscope"
    else:
        assert cmd[1:] == ["-m", "vramscope"]


def test_the_shipped_entry_is_what_install_writes():
    """packaging/*.desktop (for distribution packagers) and the installed entry agree."""
    assert SHIPPED_ENTRY.read_text() == de.render(["vramscope"])


def test_command_line_install_show_uninstall(tmp_path):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "share"), HOME=str(tmp_path))
    run = [sys.executable, "-m", "vramscope.desktop_entry"]
    out = subprocess.run(
        run + ["show", "--exec", "/opt/x/vramscope"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "Exec=/opt/x/vramscope %f" in out
    assert not (tmp_path / "share").exists()
    done = subprocess.run(run + ["install"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    entry = tmp_path / "share" / "applications" / de.DESKTOP_FILE
    assert "added to the desktop menu" in done.stdout and entry.is_file()
    done = subprocess.run(run + ["uninstall"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and not entry.exists()


@pytest.mark.skipif(
    shutil.which("desktop-file-validate") is None,
    reason="desktop-file-validate not installed (apt-get install desktop-file-utils)",
)
def test_entries_pass_desktop_file_validate(xdg):
    env, share = xdg
    de.install(["/opt/a b/vramscope"], env=env, refresh_caches=False)
    for path in (SHIPPED_ENTRY, share / "applications" / de.DESKTOP_FILE):
        done = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
        assert done.returncode == 0 and "error" not in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(
    shutil.which("appstreamcli") is None, reason="appstreamcli not installed (apt-get install appstream)"
)
def test_metainfo_passes_appstreamcli():
    done = subprocess.run(
        ["appstreamcli", "validate", "--no-net", str(METAINFO)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = METAINFO.read_text()
    assert f'<launchable type="desktop-id">{de.DESKTOP_FILE}</launchable>' in text


def test_an_entry_that_is_a_link_to_a_fifo_is_refused_and_left_alone(tmp_path):
    import stat

    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "share"), HOME=str(tmp_path))
    apps = tmp_path / "share" / "applications"
    apps.mkdir(parents=True)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (apps / de.DESKTOP_FILE).symlink_to(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "vramscope.desktop_entry", "install"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().endswith("which is a FIFO; not replaced")
    assert len(done.stderr.strip().splitlines()) == 1
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and (apps / de.DESKTOP_FILE).is_symlink()
