"""The native reader: a snapshot's pickle read straight into columns (``_columns.c``).

``pickle.load`` builds a dict, a frames list and three ints for every trace
entry -- about 4.5 bytes of memory per byte of file -- before anything is
summarised. The extension walks the pickle's opcodes itself (those
``pickle.dump`` writes for plain values, protocols 2 to 5; every opcode that
could name or call anything refused), turns each batch of trace entries into
rows of columns as it is appended, interns their frames, and drops the entries
and their memo slots; the segments and blocks (few) are built as objects. So
the file is read once, at about ``pickle.load``'s speed, in about its own
size of memory.

The extension is optional (a C compiler at install time): without it, or for a
pickle it leaves to Python (an opcode ``pickle.dump`` does not write for a
snapshot, an entry referred to twice), the pure-Python reader
(``safe_load`` + ``building``) reads the file instead, and ``Snapshot.reader``
says which read it and why.
"""

from __future__ import annotations

import os
import pickletools

import numpy as np

from vramscope.core.safe_io import bounded_read
from vramscope.core.snapshot import building, memory_cap
from vramscope.core.snapshot.columns import DeviceTrace, Snapshot
from vramscope.core.snapshot.safe_load import Cancelled, SnapshotError, refusal
from vramscope.core.snapshot.stacks import not_a_snapshot

try:
    from vramscope.core.snapshot import _columns

    WHY_NOT: str | None = None
except ImportError as exc:  # not built (no compiler at install time), or built for another Python
    _columns = None  # type: ignore[assignment]
    WHY_NOT = f"the native reader is not built ({exc})"

NATIVE = "native"
PYTHON = "pure-Python reader"


class LeftToPython(Exception):
    """A pickle the native reader leaves to the pure-Python one; the message says why."""


def _opcode_name(code: int) -> str:
    for op in pickletools.opcodes:
        if op.code.encode("latin-1") == bytes([code]):
            return op.name
    return f"opcode 0x{code:02x}"


def _refusal_text(what: str) -> str:
    if what.startswith("global "):
        module, _, name = what[len("global ") :].partition(".")
        return refusal(module, name)
    return (
        f"the pickle asks to build an object ({_opcode_name(int(what.split('0x')[-1], 16))}); a memory "
        "snapshot never does, so it is refused and nothing in it was run"
    )


def read(path, on_progress=None, cancelled=None) -> Snapshot:
    """The columns of ``path``, read natively. ``LeftToPython`` where the pure-Python reader
    must read it; otherwise as ``reading.read``."""
    if _columns is None:
        raise LeftToPython(WHY_NOT)
    builder = building._Builder()
    other: dict[int, dict[int, dict]] = {}

    def odd(device: int, row: int, key, value) -> None:
        other.setdefault(device, {}).setdefault(row, {})[key] = value
        if key not in building.KNOWN_ENTRY_FIELDS:
            builder.unknown.add(key if isinstance(key, str) else repr(key))

    def progress(done: int, size: int) -> bool:
        if cancelled is not None and cancelled():
            return True
        if on_progress is not None:
            on_progress(done, size)
        return False

    with bounded_read.opened(path, follow=True) as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        head = os.pread(fd, 2, 0)
        os.lseek(fd, 0, os.SEEK_SET)  # (the extension reads the descriptor itself, from here)
        if len(head) < 2 or head[0] != 0x80 or not 2 <= head[1] <= 5:
            raise SnapshotError(f"{path} is not a pickle (a PyTorch memory snapshot is one)")
        try:
            with memory_cap.capped_for(size):
                root, traces = _columns.read(
                    fd,
                    size,
                    builder.codes,
                    builder.stacks.intern,
                    builder._new_action,
                    odd,
                    progress,
                )
        except _columns.Unsupported as exc:
            raise LeftToPython(f"the native reader leaves this pickle to Python ({exc})") from None
        except _columns.Cancelled:
            raise Cancelled() from None
        except _columns.Refused as exc:
            raise SnapshotError(f"{path}: {_refusal_text(str(exc))}") from None
        except _columns.Truncated:
            raise SnapshotError(f"{path} is truncated (the pickle ends before its last object)") from None
        except _columns.Bad as exc:
            raise SnapshotError(f"{path} is not a readable pickle: {exc}") from None
        except _columns.NotSnapshot as exc:
            raise SnapshotError(f"{path}: {not_a_snapshot(str(exc))}") from None
        except MemoryError:
            raise SnapshotError(f"{path} does not fit in memory (or a length in it is corrupt)") from None
        except SnapshotError as exc:  # from the interning of frames
            raise SnapshotError(f"{path}: {exc}") from None
        except OSError as exc:
            raise SnapshotError(f"{path} could not be read ({exc})") from None
        except building.UNEXPECTED as exc:
            raise SnapshotError(f"{path}: {building.unexpected(exc)}") from None
    listed = root.get("device_traces") if type(root) is dict else None
    if traces and not (
        type(listed) is list and len(listed) == len(traces) and all(type(t) is list and not t for t in listed)
    ):
        raise LeftToPython(
            "the native reader leaves this pickle to Python (device_traces is not where expected)"
        )
    if not traces and type(listed) is list and listed:
        raise LeftToPython(
            "the native reader leaves this pickle to Python (device_traces is not where expected)"
        )
    device_traces = [
        DeviceTrace(
            np.frombuffer(t, np.int64),
            np.frombuffer(a, np.int16),
            np.frombuffer(ad, np.int64),
            np.frombuffer(s, np.int64),
            np.frombuffer(st, np.int64),
            np.frombuffer(k, np.int32),
            other.get(d, {}),
            bool(stamped),
        )
        for d, (t, a, ad, s, st, k, stamped) in enumerate(traces)
    ]
    try:
        snap = building.from_native(root, device_traces, builder)
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    snap.reader = NATIVE
    return snap
