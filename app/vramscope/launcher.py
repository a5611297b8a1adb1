"""The `vramscope` command on the user's PATH: a link in ``~/.local/bin``.

A virtual environment's ``bin/`` is on no one's PATH, so after
``python3 -m venv ~/.venvs/vramscope && .../pip install .`` a fresh shell says
"vramscope: command not found". ``vramscope desktop install`` therefore also
links ``~/.local/bin/vramscope`` to this installation's command. That
directory is the XDG Base Directory spec's place for a user's executables,
and the login profiles of Debian and Ubuntu (``/etc/skel/.profile``), Fedora
(``~/.bashrc``) and openSUSE put it on the PATH -- Debian's and Ubuntu's only
when it exists at login, so the first time it is made the user is told to
open a new login shell. Whether the next login puts it on the PATH is asked
of the user's login shell itself (login_path.py), and said definitely; where it
does not, ``--add-to-path`` adds the line to the login file that shell reads.

No Qt; nothing outside ``~/.local/bin`` is written (and, with ``--add-to-path``,
the one login file), and a file there that is not a link (someone else's ``vramscope``) is left alone.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

from vramscope import login_path

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


def install_launcher(
    target: pathlib.Path | None = None, env: dict | None = None, add_to_path: bool = False
) -> str:
    """Link ``~/.local/bin/vramscope`` to ``target``; returns what to tell the user.
    ``add_to_path``: where the login shell does not put that directory on the PATH,
    add the line that does to its login file (login_path.py)."""
    target = target or this_command()
    if target is None:
        return (
            f"no `{COMMAND}` executable found for this installation: nothing linked "
            f"in {bin_dir(env)} (`{sys.executable} -m vramscope` runs it)"
        )
    directory = bin_dir(env)
    link = directory / COMMAND
    if link.resolve() == target.resolve():
        pass
    elif link.exists() and not link.is_symlink():
        return (
            f"{link} exists and is not a link: left as it is (run {target} "
            f"or remove that file and install again)"
        )
    else:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{COMMAND}.tmp{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        os.replace(tmp, link)
    return f"`{COMMAND}` command: {link} -> {target}\n{path_advice(directory, env, add_to_path)}"


def path_advice(directory: pathlib.Path, env: dict | None = None, add_to_path: bool = False) -> str:
    """Whether `vramscope` runs from a new login, said definitely (login_path.py asks the
    user's login shell), and what to do where it does not."""
    env = os.environ if env is None else env
    if str(directory) in env.get("PATH", "").split(os.pathsep):
        return f"{directory} is on your PATH: `{COMMAND}` runs from any shell"
    home = directory.parents[1]
    shell = login_path.login_shell()
    now = f"(in this shell now: {PATH_LINE})"
    found = login_path.login_path(home, shell)
    if found is None:
        return (
            f"cannot tell whether your login shell ({shell}) puts {directory} on the PATH: "
            f"add it as that shell does (bash, zsh, sh: {PATH_LINE} in ~/.profile; "
            f"fish: fish_add_path {directory}), then log in again"
        )
    if str(directory) in found:
        return f"your login shell ({shell}) puts {directory} on the PATH: `{COMMAND}` runs after you log in again {now}"
    profile = login_path.login_file(home, shell)
    if not add_to_path:
        return (
            f"your login shell ({shell}) does not put {directory} on the PATH: run "
            f"`{COMMAND} desktop install --add-to-path` to add a line to {profile} that does, "
            f"or add it yourself: {PATH_LINE}"
        )
    added = login_path.add_to_login_file(profile)
    if str(directory) in (login_path.login_path(home, shell) or ()):
        said = "added a line to" if added else "the line is already in"
        return f"{said} {profile}: `{COMMAND}` runs after you log in again {now}"
    return (
        f"a line was added to {profile}, but your login shell ({shell}) still does not put "
        f"{directory} on the PATH (another login file may set PATH): add {PATH_LINE} there"
    )


def uninstall_launcher(env: dict | None = None) -> pathlib.Path | None:
    """Remove the link if it is one to a vramscope; returns it when removed."""
    link = bin_dir(env) / COMMAND
    if link.is_symlink() and pathlib.Path(os.readlink(link)).name == COMMAND:
        link.unlink()
        return link
    return None
