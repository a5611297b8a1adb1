"""The `vramscope` command on the user's PATH: a link in ``~/.local/bin``.

A virtual environment's ``bin/`` is on no one's PATH, so after
``python3 -m venv ~/.venvs/vramscope && .../pip install .`` a fresh shell says
"vramscope: command not found". ``vramscope desktop install`` therefore also
links ``~/.local/bin/vramscope`` to this installation's command. That
directory is the XDG Base Directory spec's place for a user's executables,
and the login profiles of Debian and Ubuntu (``/etc/skel/.profile``), Fedora
(``~/.bashrc``) and openSUSE put it on the PATH -- Debian's and Ubuntu's only
when it exists at login, so the first time it is made the user is told to
open a new login shell. Where it is not on the PATH the message says the line
to add to ``~/.profile``.

No Qt; nothing outside ``~/.local/bin`` is written, and a file there that is
not a link (someone else's ``vramscope``) is left alone.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

COMMAND = "vramscope"
PATH_LINE = 'export PATH="$HOME/.local/bin:$PATH"'


def bin_dir(env: dict | None = None) -> pathlib.Path:
    env = os.environ if env is None else env
    return pathlib.Path(env.get("HOME") or os.path.expanduser("~")) / ".local" / "bin"


def this_command() -> pathlib.Path | None:
    """The executable that runs this vramscope: the bundle's own file, the
    console script that started this process, or the one beside this Python."""
    if getattr(sys, "frozen", False):
        return pathlib.Path(sys.executable).absolute()
    candidates = [
        pathlib.Path(sys.argv[0]) if sys.argv and sys.argv[0] else None,
        pathlib.Path(sys.executable).with_name(COMMAND),
    ]
    for path in candidates:
        if path is not None and path.name == COMMAND and path.is_file() and os.access(path, os.X_OK):
            return path.absolute()
    found = shutil.which(COMMAND)
    return pathlib.Path(found).absolute() if found else None


def install_launcher(target: pathlib.Path | None = None, env: dict | None = None) -> str:
    """Link ``~/.local/bin/vramscope`` to ``target``; returns what to tell the user."""
    target = target or this_command()
    if target is None:
        return (
            f"no `{COMMAND}` executable found for this installation: nothing linked "
            f"in {bin_dir(env)} (`{sys.executable} -m vramscope` runs it)"
        )
    directory = bin_dir(env)
    link = directory / COMMAND
    if link.resolve() == target.resolve():
        made = False
    elif link.exists() and not link.is_symlink():
        return (
            f"{link} exists and is not a link: left as it is (run {target} "
            f"or remove that file and install again)"
        )
    else:
        made = not directory.is_dir()
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{COMMAND}.tmp{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        os.replace(tmp, link)
    return f"`{COMMAND}` command: {link} -> {target}\n{path_advice(directory, made, env)}"


def path_advice(directory: pathlib.Path, made: bool, env: dict | None = None) -> str:
    env = os.environ if env is None else env
    on_path = str(directory) in env.get("PATH", "").split(os.pathsep)
    if on_path:
        return f"{directory} is on your PATH: `{COMMAND}` runs from any shell"
    if made:
        return (
            f"{directory} is new: open a new login shell (or log in again) and `{COMMAND}` "
            f"runs; if it does not, add this line to ~/.profile: {PATH_LINE}"
        )
    return f"{directory} is not on your PATH: add this line to ~/.profile, then log in again: {PATH_LINE}"


def uninstall_launcher(env: dict | None = None) -> pathlib.Path | None:
    """Remove the link if it is one to a vramscope; returns it when removed."""
    link = bin_dir(env) / COMMAND
    if link.is_symlink() and pathlib.Path(os.readlink(link)).name == COMMAND:
        link.unlink()
        return link
    return None
