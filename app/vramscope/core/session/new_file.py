"""A new session file: created empty, readable by the user only, never over
another recording, never through a link or a companion file (-wal, -shm,
-journal) that is already there; a name SQLite can add its suffix to."""

from __future__ import annotations

import os
import pathlib

from vramscope.core.safe_io import safe_write
from vramscope.core.session.errors import SessionError, SessionExistsError
from vramscope.core.session.library import session_files

COMPANION_SUFFIX = "-journal"  # the longest name SQLite adds beside the file


def _name_max(directory: pathlib.Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def create_private_file(path: pathlib.Path) -> None:
    """Create an empty file readable by the user only; refuse to overwrite.

    Raises SessionError with one line for anything in the way: the name too
    long (SQLite must be able to add "-wal" to it), the directory not
    writable, read-only or not creatable.
    """
    limit = _name_max(path.parent if path.parent.exists() else pathlib.Path("."))
    if len(path.name.encode()) + len(COMPANION_SUFFIX) > limit:
        raise SessionError(
            f"cannot create session file {path.name[:40]}...: the name is "
            f"{len(path.name.encode())} bytes; at most {limit - len(COMPANION_SUFFIX)} "
            f"(SQLite adds '{COMPANION_SUFFIX}' beside it) -- choose a shorter --out name"
        )
    try:
        safe_write.check_parent(path)  # "/dev/null/x": not a directory, said as such
    except safe_write.UnsafeTarget as exc:
        raise SessionError(str(exc)) from None
    for companion in session_files(path)[1:]:  # SQLite opens these by name, links followed
        if os.path.lexists(companion):
            raise SessionExistsError(
                f"{companion} already exists beside {path.name}; vramscope does not write "
                "through it -- choose another --out name or remove it"
            )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = safe_write.create_new(path)
    except FileExistsError:
        raise SessionExistsError(
            f"{path} already exists; vramscope does not overwrite a recording -- "
            "choose another --out name or remove the file"
        ) from None
    except OSError as exc:
        raise SessionError(f"cannot create session file {path}: {exc.strerror or exc}") from None
    os.close(fd)


def remove_quietly(path: pathlib.Path) -> None:
    """The session file and its SQLite companions, gone (what is not there is skipped)."""
    for p in session_files(path):
        try:
            p.unlink()
        except OSError:
            pass
