"""Whether the user's login shell puts ``~/.local/bin`` on the PATH, and the line
that makes it do so (what ``pipx ensurepath`` does, for one directory).

The answer is not guessed from file names: the user's login shell (the one
in the password database, as login(1) and display managers start it) is run
once as a login shell (``-l -c``) in a clean environment with only HOME,
USER, LOGNAME and SHELL, and prints its PATH -- the PATH the next login
will have, with ``~/.local/bin`` existing (Debian's and Ubuntu's
``/etc/skel/.profile`` add it only when it exists; Debian's root
``.profile`` never does). Bash reads the first of ``~/.bash_profile``,
``~/.bash_login`` and ``~/.profile`` (bash(1), INVOCATION), zsh
``~/.zprofile`` (zsh(1), STARTUP/SHUTDOWN FILES), other Bourne shells
``~/.profile``: ``login_file`` names the one to add the line to.

No Qt; the only file written is that login file, appended to on request.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import subprocess

from vramscope.core.safe_io import safe_write
from vramscope.core.safe_io.bounded_read import read_bytes

MARK = "# added by `vramscope desktop install --add-to-path`"
PATH_LINE = (
    'case ":$PATH:" in *":$HOME/.local/bin:"*) ;; *) PATH="$HOME/.local/bin:$PATH"; export PATH ;; esac'
)
SHELLS = ("bash", "zsh", "sh", "dash", "ksh", "mksh")  # Bourne shells: `-l -c` and ~/.profile work
_SAY = "__vramscope_path__="
PROBE_SECONDS = 10.0
MAX_PROFILE = 1 << 20


def login_shell() -> str:
    """The user's login shell: the password database's, else $SHELL, else /bin/sh."""
    try:
        shell = pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        shell = ""
    return shell or os.environ.get("SHELL") or "/bin/sh"


def login_path(home: pathlib.Path, shell: str | None = None) -> list[str] | None:
    """The PATH a fresh login shell of this user has; None when it cannot be told
    (a shell that is not a Bourne shell, one that failed or took too long)."""
    shell = shell or login_shell()
    if os.path.basename(shell) not in SHELLS:
        return None
    user = _user_name()
    env = {"HOME": str(home), "USER": user, "LOGNAME": user, "SHELL": shell}
    try:
        done = subprocess.run(
            [shell, "-l", "-c", f"printf '\\n{_SAY}%s\\n' \"$PATH\""],
            env=env,
            cwd=str(home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    said = [line for line in done.stdout.decode(errors="replace").splitlines() if line.startswith(_SAY)]
    return said[-1][len(_SAY) :].split(os.pathsep) if said else None


def _user_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER", "")


def login_file(home: pathlib.Path, shell: str | None = None) -> pathlib.Path | None:
    """The file a login shell of this user reads, to add the line to (None: not a Bourne shell)."""
    name = os.path.basename(shell or login_shell())
    if name not in SHELLS:
        return None
    if name == "zsh":
        return home / ".zprofile"
    if name == "bash":
        for candidate in (".bash_profile", ".bash_login"):
            if (home / candidate).exists():
                return home / candidate
    return home / ".profile"


def add_to_login_file(path: pathlib.Path) -> bool:
    """Append the PATH line to ``path`` (made when missing); False when it is there already."""
    # the user's own file: a dotfile kept in a repository is a symlink, followed
    text = read_bytes(path, MAX_PROFILE, follow=True).decode(errors="replace") if path.exists() else ""
    if MARK in text:
        return False
    lead = "" if not text or text.endswith("\n") else "\n"
    fd = safe_write.open_append(path, path.stat().st_mode & 0o777 if path.exists() else 0o644)
    with os.fdopen(fd, "a") as f:
        f.write(f"{lead}\n{MARK}\n{PATH_LINE}\n")
    return True
