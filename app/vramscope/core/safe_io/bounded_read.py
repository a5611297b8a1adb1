"""Reading a file someone else may control: only regular files, bounded in bytes and depth.

vramscope reads files it did not write: agents' final dumps in runtime
directories (another user's, through /proc/PID/root for containers), OOM
snapshots a session names, configs and sessions named on the command line.
Any of them may be a FIFO (``open`` blocks until a writer comes), a device
(``/dev/zero`` never ends), a symlink into someone else's files, or a
290 MB file. Here every such read:

- looks before it opens (a device is never opened), then opens with ``O_NOFOLLOW`` (a symlink in the last component is refused,
  ELOOP) and ``O_NONBLOCK`` (a FIFO's open returns at once), then ``fstat``\\s
  the descriptor it got and refuses anything but a regular file;
- reads at most ``limit`` bytes (a larger file is refused, never half read);
- parses JSON with bounded nesting (vramscope/agent/json_limits.py).

Errors are ``UnreadableFile`` (an OSError) with one line saying why.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from vramscope.agent import json_limits

MiB = 1 << 20


class UnreadableFile(OSError):
    """A file that is not read: not a regular file, a symlink, too large."""

    def __str__(self) -> str:  # the one line, without "[Errno N]"
        return self.strerror or super().__str__()


def describe_mode(mode: int) -> str:
    """What a file is, in words ("a FIFO", "a socket", "a character device", ...)."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike, *, follow: bool = False) -> int:
    """A read-only descriptor of the regular file at ``path`` (the caller closes it).

    ``follow``: a symlink in the last component is followed (files the user names
    on the command line); otherwise it is refused. Never blocks on a FIFO.
    """
    try:  # a device is never opened at all (opening some has effects)
        st = os.stat(path) if follow else os.lstat(path)
    except OSError as exc:
        raise UnreadableFile(exc.errno, f"{path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnreadableFile(errno.ELOOP, f"{path} is a symlink; not followed")
    if not stat.S_ISREG(st.st_mode):
        raise UnreadableFile(errno.EINVAL, f"{path} is {describe_mode(st.st_mode)}, not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise UnreadableFile(exc.errno, f"{path} is a symlink; not followed") from None
        raise UnreadableFile(exc.errno, f"{path}: {exc.strerror}") from None
    st = os.fstat(fd)  # what was opened, whatever the name points at by now
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnreadableFile(errno.EINVAL, f"{path} is {describe_mode(st.st_mode)}, not a regular file")
    os.set_blocking(fd, True)
    return fd


@contextlib.contextmanager
def opened(path: str | os.PathLike, *, follow: bool = False):
    """``open_regular`` as a binary file object."""
    with os.fdopen(open_regular(path, follow=follow), "rb") as f:
        yield f


def read_bytes(path: str | os.PathLike, limit: int, *, follow: bool = False) -> bytes:
    """The whole file, when it is a regular file of at most ``limit`` bytes."""
    with opened(path, follow=follow) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise UnreadableFile(errno.EFBIG, f"{path} is {size} bytes; at most {limit} are read")
        data = f.read(limit + 1)  # a file growing while read is cut off here
    if len(data) > limit:
        raise UnreadableFile(errno.EFBIG, f"{path} grew past {limit} bytes while read")
    return data


def read_json(
    path: str | os.PathLike, limit: int, *, follow: bool = False, depth: int = json_limits.MAX_DEPTH
):
    """Parsed JSON from a bounded regular file; ``ValueError`` when malformed or too deep."""
    return json_limits.loads(read_bytes(path, limit, follow=follow), depth)
