"""The settings file on disk: one TOML file in the user's config dir, no Qt.

    <user config dir>/settings.toml      (platformdirs: ~/.config/vramscope/ on Linux)

Read with the standard library's ``tomllib`` (``tomli`` on Python 3.10, the same
parser: PEP 680), written with ``tomli-w`` through core/safe_io/safe_write.py (a new
file renamed over the old one: a crash never leaves half a file).

A file that cannot be used -- not TOML, not a regular file (a FIFO, a
directory), a symlink of another user or to another user's file, larger than
``SIZE_LIMIT`` -- is never read and never overwritten: it is renamed aside
(``settings.toml.unusable-<time>``, the ``ASIDE_KEEP`` newest kept) with one
line saying so, and the defaults apply. The reads are bounded
(core/safe_io/bounded_read.py): a FIFO does not block, a device is not opened. What is
written is never over the limit it is read with (``TooLarge``): what the
program writes it reads back.
"""

from __future__ import annotations

import os
import pathlib
import sys
import time

from vramscope.core.safe_io import safe_write
from vramscope.core.safe_io.bounded_read import UnreadableFile, read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, before it joined the standard library
    import tomli as tomllib

APP = "vramscope"
FILE_NAME = "settings.toml"
SIZE_LIMIT = 256 * 1024  # a few hundred bytes in practice; the window's layout is the largest part
DEPTH_LIMIT = 16  # tables and lists within each other; the file itself uses 2
ASIDE_SUFFIX = ".unusable-"
ASIDE_KEEP = 3  # files put aside kept beside it (the newest): one rewritten in a loop leaves no pile


class TooLarge(ValueError):
    """What would be written is over ``SIZE_LIMIT``: the next read would refuse it."""


class SettingsFileError(Exception):
    """Why the settings file was not used (one line), and where it went."""


def default_path() -> pathlib.Path:
    import platformdirs

    return pathlib.Path(platformdirs.user_config_dir(APP, appauthor=False)) / FILE_NAME


def exists(path: str | os.PathLike) -> bool:
    return os.path.lexists(path)


def read(path: str | os.PathLike) -> dict:
    """The file's tables; {} when there is none. A file that cannot be used is put
    aside and ``SettingsFileError`` says why and where (one line)."""
    path = pathlib.Path(path)
    if not os.path.lexists(path):
        return {}
    try:
        target = safe_write.target_of(path)  # ours, regular, or our link to one of ours
        data = read_bytes(target, SIZE_LIMIT)
        tables = tomllib.loads(data.decode("utf-8"))
        if _deeper_than(tables, DEPTH_LIMIT):
            raise ValueError(f"nested deeper than {DEPTH_LIMIT} levels")
        return tables
    except RecursionError:  # the parser recurses per level of nesting
        reason = f"nested deeper than {DEPTH_LIMIT} levels"
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as exc:
        reason = _one_line(exc)
    raise SettingsFileError(
        f"the settings file {path} is unusable ({reason}); {put_aside(path)}; using the defaults"
    )


def write(path: str | os.PathLike, tables: dict) -> None:
    """Replace the file with ``tables`` (safe_write: atomic, never through another's link)."""
    import tomli_w

    path = pathlib.Path(path)
    data = tomli_w.dumps(tables).encode("utf-8")
    if len(data) > SIZE_LIMIT:  # what is written must read back
        raise TooLarge(f"the settings would take {len(data):,} bytes, over the {SIZE_LIMIT:,} read back")
    safe_write.private_dir(path.parent)
    safe_write.write_bytes(path, data, 0o600)


def put_aside(path: pathlib.Path) -> str:
    """Rename ``path`` (whatever it is: a link is renamed, not followed) to a name of its
    own beside it, keeping the ``ASIDE_KEEP`` newest such files; returns what
    happened, for the warning."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    taken = [n for when, n in _asides(path) if when == stamp.replace("-", "")]
    first = max(taken) + 1 if taken else 0  # after the newest: the order stays the age
    for n in range(first, first + 100):
        aside = path.with_name(f"{path.name}{ASIDE_SUFFIX}{stamp}{'-' + str(n) if n else ''}")
        if os.path.lexists(aside):
            continue
        try:
            os.rename(path, aside)
        except OSError as exc:
            return f"it could not be kept aside ({exc.strerror}) and is left as it is"
        _drop_old_asides(path)
        return f"kept as {aside.name}"
    return "left as it is"


def _aside_order(prefix: str, name: str) -> tuple[str, int] | None:
    """(stamp, n) of a name ``put_aside`` gave (``settings.toml.unusable-YYYYmmdd-HHMMSS[-n]``),
    None for any other name."""
    parts = name[len(prefix) :].split("-")
    if not name.startswith(prefix) or len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        return None
    return parts[0] + parts[1], int(parts[2]) if len(parts) == 3 else 0


def _asides(path: pathlib.Path) -> dict[tuple[str, int], str]:
    """The files put aside from ``path``: (stamp, n) -> name."""
    prefix = path.name + ASIDE_SUFFIX
    try:
        names = os.listdir(path.parent)
    except OSError:
        return {}
    return {order: name for name in names if (order := _aside_order(prefix, name)) is not None}


def _drop_old_asides(path: pathlib.Path) -> None:
    """Remove all but the ``ASIDE_KEEP`` newest files put aside from ``path`` (this
    user's own; a link is removed, not followed)."""
    ours = sorted(_asides(path).items())
    for _order, name in ours[:-ASIDE_KEEP]:
        old = path.parent / name
        try:
            if os.lstat(old).st_uid == os.getuid():
                os.unlink(old)
        except OSError:
            pass


def _deeper_than(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, (UnreadableFile, safe_write.UnsafeTarget)):
        text = str(exc)
    elif isinstance(exc, OSError):
        text = exc.strerror or str(exc)
    elif isinstance(exc, UnicodeDecodeError):
        text = "not UTF-8 text"
    elif not isinstance(exc, tomllib.TOMLDecodeError):
        text = str(exc)
    else:
        text = f"not TOML: {exc}"
    return " ".join(text.split())[:200]
