"""Unpickle a memory snapshot without running code.

``pickle.load`` runs whatever callable a pickle names (GLOBAL / STACK_GLOBAL,
then REDUCE; the Python docs' warning on the pickle module). A snapshot
written by ``torch.cuda.memory._dump_snapshot`` never names one: it is
``pickle.dump`` of ``torch._C._cuda_memorySnapshot()``'s plain dicts, lists,
tuples (``segment_pool_id``), strings, ints and booleans. So the C unpickler
is used with ``find_class`` refusing every global (the pattern of the pickle
docs' "Restricting Globals", with nothing allowed): extension codes go through
``find_class`` too and persistent ids are refused by default, so nothing
but builtin containers and scalars is ever built, at C speed.

The file is read through ``core/bounded_read`` (a regular file, never a
FIFO or a device), in chunks that report progress and can be cancelled; a
length in the stream larger than what is left of the file is "truncated"
before anything is allocated for it.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import pickle
import sys

from vramscope.core.safe_io import bounded_read
from vramscope.core.snapshot import memory_cap

CHUNK = 1 << 20
SNAPSHOT_SUFFIXES = (
    ".pickle",
    ".pkl",
)  # what a snapshot file is called (any pickle is tried)  # progress is reported at most once per MiB read


class SnapshotError(ValueError):
    """A file that is not loaded as a snapshot; the message is one line."""


class Cancelled(Exception):
    """Loading was cancelled by the caller."""


class RefusingUnpickler(pickle.Unpickler):
    """The C unpickler, with every global refused (nothing callable is ever built)."""

    def find_class(self, module, name):
        raise SnapshotError(refusal(module, name))


def refusal(module, name) -> str:
    """Why a pickle naming the global ``module.name`` is refused, in one line."""
    return (
        f"the pickle names a Python global ({_short(module)}.{_short(name)}); a memory snapshot "
        "never does, so it is refused and nothing in it was run"
    )


def _short(text, limit: int = 80) -> str:
    text = str(text)
    return repr(text[:limit] + ("..." if len(text) > limit else ""))[1:-1]


class _Reader(io.RawIOBase):
    """The file, read for the unpickler: counts bytes and reports progress. Cancelling
    makes it end (EOF) rather than raise: an exception from inside ``readinto`` would
    leave the buffered reader's buffer exported while it is freed."""

    def __init__(self, f, size: int, on_progress=None, cancelled=None):
        self.f, self.size, self.done = f, size, 0
        self.on_progress, self.cancelled = on_progress, cancelled
        self.next_report = CHUNK
        self.stopped = False
        self.failed: BaseException | None = None  # what reading the file raised

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """At most what the file has left (RawIOBase's own read makes a bytearray of
        ``size`` -- a corrupt length's -- and it leaks an exported buffer on error)."""
        if size is None or size < 0:
            size = max(self.size - self.done, 0)
        buffer = bytearray(min(size, max(self.size - self.done, 0) + 1))
        n = self.readinto(buffer)
        return bytes(buffer[:n])

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer) -> int:
        if self.stopped:
            return 0
        try:
            n = self.f.readinto(buffer) or 0
        except (OSError, MemoryError, ValueError) as exc:  # said by load(), not raised here
            self.failed, self.stopped = exc, True
            return 0
        self.done += n
        if self.done >= self.next_report:
            self.next_report = self.done + CHUNK
            if self.cancelled is not None and self.cancelled():
                self.stopped = True
            elif self.on_progress is not None:
                self.on_progress(self.done, self.size)
        return n


class _WithoutReadinto:
    """The buffered file as the unpickler sees it: ``read``, ``readline`` and ``peek``
    (C methods, no Python per call) but no ``readinto``. With one, a damaged file's
    BYTEARRAY8 length cut short by the file's end makes CPython's unpickler free a
    bytearray whose buffer it still exports ("SystemError: deallocated bytearray
    object has exported buffers"); without, it reads and copies (bpo-39681's path)."""

    def __init__(self, buffered: io.BufferedReader):
        self.read, self.readline, self.peek = buffered.read, buffered.readline, buffered.peek


EXPORT_NOISE = "deallocated bytearray object has exported buffers"


@contextlib.contextmanager
def _without_export_noise():
    """While a file is unpickled: CPython's unpickler, freeing the bytearray of a damaged
    BYTEARRAY8 it could not fill, reports "SystemError: deallocated bytearray object has
    exported buffers" through ``sys.excepthook`` (PyErr_Print from the deallocation; no
    exception reaches the caller, which refuses the file in one line). That one report
    is dropped; any other goes to the hook as before."""
    before = sys.excepthook

    def hook(kind, value, tb):
        if not (kind is SystemError and str(value) == EXPORT_NOISE):
            before(kind, value, tb)

    sys.excepthook = hook
    try:
        yield
    finally:
        if sys.excepthook is hook:
            sys.excepthook = before


def is_pickle(path) -> bool:
    """Whether ``path`` is a regular file starting as a pickle of protocol 2 to 5 does
    (a session file is SQLite's; a snapshot is a pickle)."""
    try:
        with bounded_read.opened(path, follow=True) as f:
            head = f.read(2)
    except OSError:
        return False
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def load(path, on_progress=None, cancelled=None):
    """The unpickled object of ``path`` (plain containers and scalars only).

    ``on_progress(bytes_read, size)`` is called about once a MiB; ``cancelled()``
    returning True stops the load (``Cancelled``). Errors: ``SnapshotError``
    (one line), ``OSError`` from opening the file."""
    with bounded_read.opened(path, follow=True) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(2)
        f.seek(0)
        if len(head) < 2 or head[0] != 0x80 or not 2 <= head[1] <= 5:
            raise SnapshotError(f"{path} is not a pickle (a PyTorch memory snapshot is one)")
        raw = _Reader(f, size, on_progress, cancelled)
        enabled = gc.isenabled()
        gc.disable()  # millions of new containers, none of them garbage: no collections meanwhile
        try:
            # a file's own sizes cannot take the machine's memory; CPython's own noise about a
            # damaged BYTEARRAY8 is not the user's (the file is refused in one line all the same)
            with memory_cap.capped_for(size), _without_export_noise():
                obj = _unpickle(path, _WithoutReadinto(io.BufferedReader(raw, buffer_size=CHUNK)))
        except SnapshotError:
            if raw.failed is not None:
                raise SnapshotError(f"{path} could not be read ({raw.failed})") from None
            if raw.stopped:  # the unpickler met the end the cancel made
                raise Cancelled() from None
            raise
        finally:
            if enabled:
                gc.enable()
        if raw.stopped:
            raise Cancelled()
        return obj


def _unpickle(path, reader):
    try:
        return RefusingUnpickler(reader).load()
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    except EOFError:
        raise SnapshotError(f"{path} is truncated (the pickle ends before its last object)") from None
    except MemoryError:
        raise SnapshotError(f"{path} does not fit in memory (or a length in it is corrupt)") from None
    except (
        pickle.UnpicklingError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        OverflowError,
    ) as exc:
        raise SnapshotError(f"{path} is not a readable pickle: {_short(exc, 160)}") from None
