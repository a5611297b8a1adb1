"""Writing a file without harming anyone: every file vramscope writes goes through here.

A monitor often runs as root on a machine shared with others, and writes
where the user says -- often /tmp, which everyone may write to. Another
user can put a symlink, a FIFO or a directory of theirs where vramscope is
about to write. The rules:

- the name is a regular file, or nothing yet: a FIFO, socket, device or
  directory there is never replaced (``UnsafeTarget``, one line);
- a symlink is written through only when it is the writer's own and points
  at a regular file (dotfiles kept in a repository); anyone else's symlink,
  or one to a device, is refused -- the device node is never replaced;
- an existing file of another user is not replaced;
- the data goes to a new temporary file (``O_CREAT|O_EXCL``: never an
  existing name, never through a link) in the target's directory, which is
  renamed over the target once complete: a half-written export never takes
  the place of a good file, and a hard link planted at the name only loses
  its name;
- directories vramscope creates for its output are 0700, and an existing
  one is used only when it is a real directory of the writer's, closed to
  others for writing (``private_dir``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import stat
import tempfile

from vramscope.core.safe_io.bounded_read import describe_mode


class UnsafeTarget(OSError):
    """A place vramscope will not write to (the message is one line)."""

    def __str__(self) -> str:  # the one line, without "[Errno N]"
        return self.strerror or super().__str__()


def _euid() -> int:
    return os.geteuid()


def target_of(path: str | os.PathLike) -> pathlib.Path:
    """The file a write to ``path`` replaces: ``path`` itself, or the regular file
    the writer's own symlink there points at. Raises UnsafeTarget otherwise."""
    path = pathlib.Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise UnsafeTarget(exc.errno, f"cannot write {path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        if st.st_uid != _euid():
            raise UnsafeTarget(
                errno.EPERM, f"{path} is a symlink of uid {st.st_uid}, not ours; not written through"
            )
        try:
            target_st = os.stat(path)
        except OSError as exc:
            raise UnsafeTarget(
                exc.errno,
                f"{path} is a symlink to {os.path.realpath(path)}, which cannot be written ({exc.strerror})",
            ) from None
        target = pathlib.Path(os.path.realpath(path))
        if not stat.S_ISREG(target_st.st_mode):
            raise UnsafeTarget(
                errno.EINVAL,
                f"{path} is a symlink to {target}, which is {describe_mode(target_st.st_mode)}; not replaced",
            )
        path, st = target, target_st
    elif not stat.S_ISREG(st.st_mode):
        raise UnsafeTarget(errno.EINVAL, f"{path} is {describe_mode(st.st_mode)}; not replaced")
    if st.st_uid != _euid():
        raise UnsafeTarget(errno.EPERM, f"{path} belongs to uid {st.st_uid}; not replaced")
    return path


def check_parent(path: str | os.PathLike) -> None:
    """Refuse, with the right reason, a path under something that is not a directory
    (``/dev/null/x``, ``notes.txt/x``)."""
    path = pathlib.Path(os.path.abspath(path))
    for parent in path.parents:
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UnsafeTarget(exc.errno, f"cannot write {path}: {parent}: {exc.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeTarget(
                errno.ENOTDIR,
                f"cannot write {path}: {parent} is {describe_mode(st.st_mode)}, not a directory",
            )
        return


def private_dir(path: str | os.PathLike) -> pathlib.Path:
    """``path`` as a 0700 directory of the writer's (created, parents too); an existing
    one only when it is a real directory of ours that others cannot write to."""
    path = pathlib.Path(path)
    check_parent(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeTarget(errno.ENOTDIR, f"{path} is {describe_mode(st.st_mode)}, not a directory; not used")
    if st.st_uid != _euid():
        raise UnsafeTarget(errno.EPERM, f"{path} belongs to uid {st.st_uid}; not used")
    if st.st_mode & 0o022:
        raise UnsafeTarget(
            errno.EPERM, f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}); not used"
        )
    return path


@contextlib.contextmanager
def replacing(path: str | os.PathLike, mode: int = 0o600, *, parents: bool = True):
    """Write a binary file object; on success it replaces ``path`` (see the module text),
    on any error the old file stays and nothing is left behind."""
    check_parent(path)
    target = target_of(path)
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:64]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            yield f
            f.flush()
        if target_of(path) != target:  # changed while we wrote: refuse rather than guess
            raise UnsafeTarget(errno.EAGAIN, f"{path} changed while it was written; not replaced")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | os.PathLike, data: bytes, mode: int = 0o600) -> pathlib.Path:
    """Replace ``path`` with ``data`` (see ``replacing``); returns the file written."""
    with replacing(path, mode) as f:
        f.write(data)
    return target_of(path)


def write_text(path: str | os.PathLike, text: str, mode: int = 0o600) -> pathlib.Path:
    return write_bytes(path, text.encode("utf-8"), mode)


def create_new(path: str | os.PathLike, mode: int = 0o600) -> int:
    """A descriptor of a new, empty file at ``path`` (never an existing name, never
    through a link): for files a library then opens by name (SQLite)."""
    check_parent(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def open_append(path: str | os.PathLike, mode: int = 0o600) -> int:
    """A descriptor appending to the log file at ``path`` (created ``mode``): the same
    rules as ``replacing`` (a link only when ours and to a regular file, never a FIFO
    or device, never another user's file)."""
    check_parent(path)
    target = target_of(path)
    fd = os.open(
        target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode
    )
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != _euid():
        os.close(fd)
        raise UnsafeTarget(errno.EPERM, f"{path} changed under us; not written")
    os.fchmod(fd, mode)
    os.set_blocking(fd, True)
    return fd
