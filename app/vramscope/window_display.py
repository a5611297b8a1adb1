"""Whether the window can open on the display the environment names, said in one
line before Qt is started (Qt itself aborts the process, exit 134, with "Reinstalling
the application may fix this problem").

For each display the environment names (``WAYLAND_DISPLAY``, ``DISPLAY``, or the
one ``QT_QPA_PLATFORM`` picks): is anything listening there, and can Qt's
platform plugin for it load (every shared library it needs is installed)? The
window can open when one of them passes. A Qt platform chosen by hand that needs
no display (``offscreen``, ``vnc``, ``eglfs``) is the user's choice and not checked.

- X11 (the X Window System protocol, "Display Names" in X(7)): ``[host]:N[.S]``
  is the Unix socket ``/tmp/.X11-unix/XN`` (on Linux also in the abstract
  namespace) when the host is empty or ``unix``, else TCP port 6000 + N on the host.
- Wayland (wayland-client's ``wl_display_connect``): ``WAYLAND_DISPLAY`` is a
  socket path, relative to ``XDG_RUNTIME_DIR`` unless absolute.
- A missing library is named with the Debian/Ubuntu package that holds it: the
  package of a shared library is its SONAME's name and version, with a hyphen
  between two digits (Debian Policy, 8.1 "Run-time shared libraries").
  Qt 6.5 and later also need ``libxcb-cursor.so.0`` for X11 (Qt's "Qt for X11
  Requirements"), which the plugin opens itself.

No Qt is imported here.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys

X11, WAYLAND = "xcb", "wayland"  # Qt's names of the two platform plugins
PLUGINS = {X11: "libqxcb.so", WAYLAND: "libqwayland.so"}
OPENED_BY_PLUGIN = {X11: ("libxcb-cursor.so.0",)}
CONNECT_SECONDS = 2.0
IN_A_TERMINAL = "in a terminal, `vramscope status` shows the same figures"
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.M)


def display_problem(env=None, platform: str | None = None) -> str | None:
    """One line saying why no named display can show the window, or None (it can,
    or no display is named at all: the caller says that itself)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return None
    chosen = env.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    if chosen and chosen not in PLUGINS:
        return None
    wanted = []
    if env.get("WAYLAND_DISPLAY") and chosen in ("", WAYLAND):
        wanted.append((WAYLAND, _wayland_problem(env)))
    if env.get("DISPLAY") and chosen in ("", X11):
        wanted.append((X11, _x11_problem(env["DISPLAY"])))
    if chosen and not wanted:
        name = "WAYLAND_DISPLAY" if chosen == WAYLAND else "DISPLAY"
        return f"vramscope: QT_QPA_PLATFORM={chosen} but {name} is unset; {IN_A_TERMINAL}"
    problems = []
    for kind, unreachable in wanted:
        why = unreachable or library_problem(kind)
        if why is None:
            return None
        problems.append(why)
    if not problems:
        return None
    return f"vramscope: cannot open the window: {'; '.join(problems)}; {IN_A_TERMINAL}"


# -- is anything listening ----------------------------------------------------------------
def _x11_problem(display: str) -> str | None:
    host, sep, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not sep or not number.isdigit():
        return f"DISPLAY={display!r} is not a display name (expected e.g. :0 or host:10.0)"
    host = host.split("/")[-1]  # "unix/host:0": the protocol before the host
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        if _unix_listens("\0" + path) or _unix_listens(path):
            return None
        return f"no X server at DISPLAY={display} (nothing listens on {path})"
    port = 6000 + int(number)
    try:
        socket.create_connection((host.strip("[]"), port), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        return f"no X server at DISPLAY={display} ({host} port {port}: {exc.strerror or exc})"
    return None


def _wayland_problem(env) -> str | None:
    name = env["WAYLAND_DISPLAY"]
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if not os.path.isabs(name) and not runtime:
        return f"WAYLAND_DISPLAY={name} but XDG_RUNTIME_DIR is unset"
    path = name if os.path.isabs(name) else os.path.join(runtime, name)
    if _unix_listens(path):
        return None
    return f"no Wayland compositor at WAYLAND_DISPLAY={name} (nothing listens on {path})"


def _unix_listens(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(CONNECT_SECONDS)
        try:
            s.connect(path)
        except OSError:
            return False
    return True


# -- can Qt's plugin load -------------------------------------------------------------------
def plugin_path(kind: str) -> pathlib.Path | None:
    """The PySide6 wheel's platform plugin (found without importing PySide6)."""
    spec = importlib.util.find_spec("PySide6")
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        path = pathlib.Path(base) / "Qt" / "plugins" / "platforms" / PLUGINS[kind]
        if path.is_file():
            return path
    return None


def library_problem(kind: str, plugin: pathlib.Path | None = None) -> str | None:
    """The libraries Qt's ``kind`` plugin needs and cannot find, with the apt line."""
    plugin = plugin or plugin_path(kind)
    if plugin is None:
        return None  # not the wheel's Qt (a bundle, a distribution's): Qt will say
    missing = missing_libraries(plugin) + [n for n in OPENED_BY_PLUGIN.get(kind, ()) if not _loads(n)]
    if not missing:
        return None
    what = "X11" if kind == X11 else "Wayland"
    packages = " ".join(dict.fromkeys(debian_package(n) for n in missing))
    return (
        f"Qt's {what} plugin needs {', '.join(missing)}, not installed "
        f"(Debian/Ubuntu: sudo apt install {packages})"
    )


def missing_libraries(plugin: pathlib.Path) -> list[str]:
    """The shared libraries ``plugin`` needs that the dynamic loader cannot find."""
    if shutil.which("ldd"):
        try:
            done = subprocess.run(
                ["ldd", str(plugin)], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
            )
            return list(dict.fromkeys(_NOT_FOUND.findall(done.stdout)))
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:  # no ldd: the first library the loader misses
        ctypes.CDLL(str(plugin), mode=os.RTLD_LAZY)
    except OSError as exc:
        first = str(exc).split(":")[0].strip()
        return [first] if ".so" in first else []
    return []


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def debian_package(soname: str) -> str:
    """'libxcb-icccm.so.4' -> 'libxcb-icccm4'; 'libxkbcommon-x11.so.0' -> 'libxkbcommon-x11-0'."""
    name, _, version = soname.partition(".so.")
    version = version.split(".")[0]
    if not version:
        return name.lower()
    joint = "-" if name[-1:].isdigit() else ""
    return f"{name}{joint}{version}".lower()
