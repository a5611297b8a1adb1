"""Where sessions live by default, and the cap that keeps them bounded.

Sessions go to ``<user data dir>/vramscope/sessions`` (platformdirs), the
directory is 0700, every file 0600. Past the cap (total size and/or age)
the oldest sessions are removed; the one being written is never touched.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import pathlib
import socket

from vramscope.core.session.schema import SUFFIX
from vramscope.core.units import GiB

DEFAULT_MAX_BYTES = 2 * GiB
DEFAULT_MAX_AGE_DAYS = 30.0


@dataclasses.dataclass(frozen=True)
class RetentionPolicy:
    """The user's cap. None disables a limit."""

    max_bytes: int | None = DEFAULT_MAX_BYTES
    max_age_days: float | None = DEFAULT_MAX_AGE_DAYS


def default_directory() -> pathlib.Path:
    import platformdirs

    return pathlib.Path(platformdirs.user_data_dir("vramscope", appauthor=False)) / "sessions"


def ensure_private_directory(path: pathlib.Path) -> pathlib.Path:
    path = pathlib.Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def new_session_path(directory: pathlib.Path | None = None, now: float | None = None) -> pathlib.Path:
    directory = ensure_private_directory(directory or default_directory())
    stamp = _dt.datetime.fromtimestamp(now) if now is not None else _dt.datetime.now()
    host = socket.gethostname().split(".")[0] or "host"
    # the pid: recorders started in the same second each get a name of their own
    base = f"{stamp:%Y-%m-%d_%H-%M-%S}_{host}_{os.getpid()}"
    path = directory / f"{base}{SUFFIX}"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"{base}-{n}{SUFFIX}"
    return path


def session_files(path: pathlib.Path) -> list[pathlib.Path]:
    """The database and its SQLite companions (WAL, shared memory)."""
    path = pathlib.Path(path)
    return [path] + [path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal")]


def session_size(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in session_files(path) if p.exists())


def list_sessions(directory: pathlib.Path | None = None) -> list[pathlib.Path]:
    """Sessions in the directory, oldest first."""
    directory = pathlib.Path(directory or default_directory())
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if p.name.endswith(SUFFIX) and p.is_file()]
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name))


def enforce_retention(
    policy: RetentionPolicy,
    directory: pathlib.Path | None = None,
    keep: pathlib.Path | None = None,
    now: float | None = None,
) -> list[pathlib.Path]:
    """Remove the oldest sessions past the cap; returns what was removed."""
    import time

    now = time.time() if now is None else now
    keep_resolved = pathlib.Path(keep).resolve() if keep is not None else None
    sessions = list_sessions(directory)
    removed: list[pathlib.Path] = []

    def remove(p: pathlib.Path) -> None:
        for f in session_files(p):
            try:
                f.unlink()
            except FileNotFoundError:
                pass
        removed.append(p)

    candidates = [p for p in sessions if p.resolve() != keep_resolved]
    if policy.max_age_days is not None:
        limit = now - policy.max_age_days * 86400.0
        for p in list(candidates):
            if p.stat().st_mtime < limit:
                remove(p)
                candidates.remove(p)
    if policy.max_bytes is not None:
        total = sum(session_size(p) for p in sessions if p not in removed)
        for p in list(candidates):  # oldest first
            if total <= policy.max_bytes:
                break
            total -= session_size(p)
            remove(p)
    return removed
