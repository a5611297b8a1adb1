"""The first look at a file offered as a session: an SQLite file at all (its
magic bytes, read without following a FIFO or device that could block), and
one whose header says it was cut short (no page of it read yet)."""

from __future__ import annotations

import errno
import pathlib
import struct

from vramscope.core.safe_io import bounded_read
from vramscope.core.session.errors import NotASessionError, SessionError

SQLITE_MAGIC = b"SQLite format 3\x00"


def _truncation(path: pathlib.Path) -> str | None:
    """Cheap truncation check from the database header (no page is read)."""
    with open(path, "rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return None
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change, pages, valid_for = (
        struct.unpack(">I", head[24:28])[0],
        struct.unpack(">I", head[28:32])[0],
        struct.unpack(">I", head[92:96])[0],
    )
    size = path.stat().st_size
    if change == valid_for and pages and size < pages * page_size:
        return (
            f"the file is truncated: {size} bytes on disk, its header says "
            f"{pages * page_size}; the samples stored past the cut are lost"
        )
    return None


def file_problem(path: pathlib.Path) -> str | None:
    """Damage the header shows (a truncated copy), or None; raises SessionError
    (no such file) or NotASessionError (not SQLite, empty, unreadable)."""
    try:  # a FIFO, socket or device is never opened (it could block or never end)
        with bounded_read.opened(path, follow=True) as f:
            magic = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise SessionError(f"{path}: no such session file") from None
        raise NotASessionError(f"{exc}; not a session file") from None
    if magic != SQLITE_MAGIC:
        raise NotASessionError(
            f"{path} is not a vramscope session (not an SQLite database"
            f"{', the file is empty' if not magic else ''})"
        )
    return _truncation(path)
