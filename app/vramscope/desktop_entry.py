"""Add vramscope to the current user's desktop menu (freedesktop), or take it out.

    vramscope desktop install       [--exec COMMAND]   # also: packaging/install_desktop.sh
                                                      # (and ~/.local/bin/vramscope: vramscope.launcher)
    vramscope desktop uninstall
    python -m vramscope.desktop_entry install           # from a checkout / pip install

Installs, under ``$XDG_DATA_HOME`` (default ``~/.local/share``):

- ``applications/io.github.vramscope.Vramscope.desktop`` with ``Exec`` and
  ``TryExec`` pointing at the command that runs this vramscope: the bundle's
  own executable when frozen (PyInstaller), else the ``vramscope`` script of
  this Python environment (or ``python -m vramscope``);
- the icon as ``icons/hicolor/<N>x<N>/apps/vramscope.png`` for every shipped
  size and ``icons/hicolor/scalable/apps/vramscope.svg``;
- ``mime/packages/io.github.vramscope.Vramscope.xml``: recorded sessions
  (``*.vramscope``) open in vramscope.

No Qt, no root, nothing outside XDG_DATA_HOME. The entry's text is built here
from ``ENTRY`` (packaging/io.github.vramscope.Vramscope.desktop is this text
with ``Exec=vramscope``; a test keeps the two the same).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from vramscope.core.safe_io import safe_write
from vramscope.launcher import install_launcher, uninstall_launcher

APP_ID = "io.github.vramscope.Vramscope"
DESKTOP_FILE = f"{APP_ID}.desktop"
ICON_NAME = "vramscope"
WM_CLASS = "vramscope"  # X11 WM_CLASS instance: Qt takes it from argv[0]'s basename

# Key order as written. Exec/TryExec are filled in by ``render``.
ENTRY = {
    "Type": "Application",
    "Version": "1.4",
    "Name": "vramscope",
    "GenericName": "GPU Memory Monitor",
    "Comment": "See what fills your GPU memory, per process, live",
    "Exec": None,
    "TryExec": None,
    "Icon": ICON_NAME,
    "Terminal": "false",
    "Categories": "System;Monitor;",
    "Keywords": "GPU;VRAM;CUDA;NVIDIA;PyTorch;memory;OOM;",
    "StartupWMClass": WM_CLASS,
    "StartupNotify": "true",
    "MimeType": "application/x-vramscope-session;",
}

# Recorded sessions (core/session: SQLite files named *.vramscope) open in vramscope.
MIME_TYPE = "application/x-vramscope-session"
MIME_XML = f"""<?xml version="1.0" encoding="UTF-8"?>
<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">
  <mime-type type="{MIME_TYPE}">
    <comment>vramscope recorded session</comment>
    <sub-class-of type="application/vnd.sqlite3"/>
    <glob pattern="*.vramscope"/>
  </mime-type>
</mime-info>
"""


# -- where things are ------------------------------------------------------------------
def data_home(env: dict | None = None) -> pathlib.Path:
    """$XDG_DATA_HOME when set to an absolute path (the spec says ignore a
    relative one), else ~/.local/share."""
    env = os.environ if env is None else env
    value = env.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return pathlib.Path(value)
    return pathlib.Path(env.get("HOME") or os.path.expanduser("~")) / ".local" / "share"


def icons_dir() -> pathlib.Path | None:
    """The shipped icons: in the package (wheel, bundle) or a checkout's resources/."""
    here = pathlib.Path(__file__).resolve().parent
    for base in (here / "resources" / "icons", here.parents[1] / "resources" / "icons"):
        if (base / f"{ICON_NAME}.svg").is_file() or any(base.glob(f"{ICON_NAME}-*.png")):
            return base
    return None


def icon_files(directory: pathlib.Path | None = None) -> dict[str, pathlib.Path]:
    """hicolor size directory ("48x48", "scalable") -> the source file."""
    directory = directory or icons_dir()
    if directory is None:
        return {}
    found: dict[str, pathlib.Path] = {}
    for png in sorted(directory.glob(f"{ICON_NAME}-*.png")):
        size = png.stem.rsplit("-", 1)[-1]
        if size.isdigit():
            found[f"{size}x{size}"] = png
    svg = directory / f"{ICON_NAME}.svg"
    if svg.is_file():
        found["scalable"] = svg
    return found


def default_command() -> list[str]:
    """The command that starts this vramscope, as argv."""
    if getattr(sys, "frozen", False):  # the PyInstaller bundle
        return [os.path.abspath(sys.executable)]
    script = pathlib.Path(sys.executable).with_name("vramscope")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("vramscope")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "vramscope"]


# -- the entry --------------------------------------------------------------------------
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def quote_exec_arg(arg: str) -> str:
    """One Exec argument, quoted as the Desktop Entry spec asks."""
    if arg and not (_RESERVED & set(arg)) and "%" not in arg:
        return arg
    inner = "".join("\\" + c if c in '"`$\\' else c for c in arg).replace("%", "%%")
    # the .desktop file is itself an escaped string: each backslash is written twice
    return '"' + inner.replace("\\", "\\\\") + '"'


def render(command: list[str] | None = None) -> str:
    """The .desktop text for ``command`` (default: this installation's)."""
    command = command or default_command()
    if "=" in command[0]:
        raise ValueError(f"the program of an Exec key must not contain '=': {command[0]!r}")
    values = dict(ENTRY)
    # %f: a session file dropped on the launcher or opened from the file manager
    values["Exec"] = " ".join(quote_exec_arg(a) for a in command) + " %f"
    if os.path.isabs(command[0]):
        values["TryExec"] = command[0]  # the entry hides itself if the program is gone
    lines = ["[Desktop Entry]"]
    lines += [f"{k}={v}" for k, v in values.items() if v is not None]
    return "\n".join(lines) + "\n"


def parse_entry(text: str) -> dict[str, str]:
    """Keys of the [Desktop Entry] group (for tests and checks)."""
    keys: dict[str, str] = {}
    group = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1]
            continue
        if group == "Desktop Entry" and "=" in line:
            k, v = line.split("=", 1)
            keys[k.strip()] = v.strip()
    return keys


# -- install / uninstall --------------------------------------------------------------
def install(
    command: list[str] | None = None, env: dict | None = None, refresh_caches: bool = True
) -> list[pathlib.Path]:
    """Write the entry and the icons; returns the files written."""
    base = data_home(env)
    icons = icon_files()
    if not icons:
        raise FileNotFoundError(
            "the vramscope icons were not found next to the package (resources/icons); reinstall vramscope"
        )
    written: list[pathlib.Path] = []
    for size, source in icons.items():
        target = base / "icons" / "hicolor" / size / "apps" / f"{ICON_NAME}{source.suffix}"
        safe_write.write_bytes(target, source.read_bytes(), 0o644)
        written.append(target)
    entry = base / "applications" / DESKTOP_FILE
    safe_write.write_text(entry, render(command), 0o644)
    mime = base / "mime" / "packages" / f"{APP_ID}.xml"
    safe_write.write_text(mime, MIME_XML, 0o644)
    written.append(mime)
    written.append(entry)  # last: what the user looks for
    if refresh_caches:
        _refresh(base)
    return written


def uninstall(env: dict | None = None, refresh_caches: bool = True) -> list[pathlib.Path]:
    """Remove what ``install`` wrote; returns the files removed."""
    base = data_home(env)
    removed: list[pathlib.Path] = []
    candidates = [base / "applications" / DESKTOP_FILE, base / "mime" / "packages" / f"{APP_ID}.xml"]
    hicolor = base / "icons" / "hicolor"
    if hicolor.is_dir():
        candidates += sorted(hicolor.glob(f"*/apps/{ICON_NAME}.png"))
        candidates += sorted(hicolor.glob(f"*/apps/{ICON_NAME}.svg"))
    for path in candidates:
        if path.is_file():
            path.unlink()
            removed.append(path)
    if refresh_caches and removed:
        _refresh(base)
    return removed


def _refresh(base: pathlib.Path) -> None:
    """Tell menus and icon caches, where the tools exist; never fails the install."""
    hicolor = base / "icons" / "hicolor"
    if hicolor.is_dir():
        os.utime(hicolor)  # icon themes watch the directory's mtime
    commands = [
        ["update-desktop-database", "-q", str(base / "applications")],
        ["update-mime-database", str(base / "mime")],
    ]
    if (hicolor / "icon-theme.cache").is_file():  # refresh a cache, never start one
        commands.append(["gtk-update-icon-cache", "-q", "-t", "-f", str(hicolor)])
    for cmd in commands:
        if shutil.which(cmd[0]) and pathlib.Path(cmd[-1]).is_dir():
            try:
                subprocess.run(
                    cmd, check=False, timeout=30, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            except (OSError, subprocess.TimeoutExpired):
                pass


# -- command line ------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=("install", "uninstall", "show"),
        help="install: add vramscope to your desktop menu; uninstall: remove it; "
        "show: print the entry that would be installed",
    )
    p.add_argument(
        "--exec",
        dest="exec_command",
        default=None,
        metavar="COMMAND",
        help="the command the menu entry runs (default: this vramscope, "
        f"currently {shlex.join(default_command())!r})",
    )
    p.add_argument(
        "--no-launcher",
        dest="launcher",
        action="store_false",
        help="leave ~/.local/bin alone (by default install also links "
        "~/.local/bin/vramscope to this vramscope, so it runs from any shell)",
    )
    p.add_argument(
        "--add-to-path",
        action="store_true",
        help="where your login shell does not put ~/.local/bin on the PATH, add the line "
        "that does to the login file it reads (~/.bash_profile, ~/.zprofile or ~/.profile)",
    )


def run(args) -> int:
    command = shlex.split(args.exec_command) if args.exec_command else None
    if args.action == "show":
        sys.stdout.write(render(command))
        return 0
    try:
        if args.action == "install":
            files = install(command)
            icons = [f for f in files if "hicolor" in f.parts]
            print(
                f"vramscope added to the desktop menu: {files[-1]}\n"
                f"{len(icons)} icon files under {data_home() / 'icons' / 'hicolor'}"
            )
            if args.launcher:
                print(install_launcher(add_to_path=args.add_to_path))
        else:
            files = uninstall()
            link = uninstall_launcher() if args.launcher else None
            files += [link] if link is not None else []
            print(f"removed {len(files)} files" if files else "nothing to remove")
    except OSError as exc:
        print(f"vramscope desktop {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="vramscope desktop", description="Add vramscope to your desktop menu, or remove it."
    )
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
