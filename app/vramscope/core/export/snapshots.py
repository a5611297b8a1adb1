"""Copy the OOM snapshots the agent saved (memory_viz pickles) next to an export.

The agent writes ``torch.cuda.memory._snapshot()`` with pickle protocol 4 at
the moment of an OOM and puts the path in the OOM event (``snapshot_path``).
The files are copied byte for byte -- never unpickled here, since loading a
pickle runs code -- after a header check that they are pickles of protocol
2..5, which is what pytorch.org/memory_viz reads.

The path comes from a session file, so it is input: only a regular file is
read, never through a symlink (core/safe_io/bounded_read.py), and at most
``SNAPSHOT_LIMIT`` bytes. The copies go into a directory of the writer's own
(core/safe_io/safe_write.py): another user's directory at that name, or a link in
it, is refused, never written through.
"""

from __future__ import annotations

import errno
import os
import pathlib
import shutil

from vramscope.agent.protocol import EventKind
from vramscope.core.safe_io import bounded_read
from vramscope.core.safe_io import safe_write
from vramscope.core.session.reader import SessionReader

PATH_KEYS = ("snapshot_path", "snapshot", "pickle_path")
SNAPSHOT_LIMIT = 8 << 30  # bytes; memory_viz snapshots of big runs are hundreds of MiB
MAX_PATH = 4096  # PATH_MAX: a longer "path" is not one


def snapshot_paths(reader: SessionReader) -> list[tuple[float, int | None, str]]:
    """(time, pid, path) of every snapshot an OOM event names."""
    procs = reader.processes()
    out = []
    for e in reader.recorded.events():
        if e["kind"] not in (EventKind.OOM, EventKind.SITES) or not isinstance(e["data"], dict):
            continue
        for key in PATH_KEYS:
            value = e["data"].get(key)
            if isinstance(value, str) and value:
                rec = procs.get(e["proc"])
                out.append((e["t"], rec.pid if rec else None, value))
                break
    return out


def _short(path: str) -> str:
    return path if len(path) <= 120 else f"{path[:60]}...{path[-40:]} ({len(path)} characters)"


def copy_snapshots(reader: SessionReader, directory: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Copy into ``directory`` (0700, files 0600); returns (copied, problems)."""
    copied, problems = [], []
    found = snapshot_paths(reader)
    directory = pathlib.Path(directory)
    for t, pid, src in found:
        if len(src) > MAX_PATH or "\0" in src:
            problems.append(f"OOM snapshot path {_short(src)!r} (pid {pid}) is not a usable path")
            continue
        try:
            with bounded_read.opened(src) as f:
                size = os.fstat(f.fileno()).st_size
                if size > SNAPSHOT_LIMIT:
                    problems.append(f"OOM snapshot {_short(src)} is {size} bytes; not copied")
                    continue
                head = f.read(2)
                if not (len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5):
                    problems.append(f"OOM snapshot {_short(src)} is not a pickle; not copied")
                    continue
                safe_write.private_dir(directory)
                dest = directory / f"oom-pid{pid}-t{t:.0f}.pickle"
                with safe_write.replacing(dest) as out:
                    out.write(head)
                    shutil.copyfileobj(f, out)
        except safe_write.UnsafeTarget as exc:
            problems.append(f"OOM snapshots not copied: {exc}")
            break
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                problems.append(f"OOM snapshot {_short(src)} (pid {pid}) is no longer on this machine")
                continue
            problems.append(f"OOM snapshot {_short(src)} (pid {pid}) not copied: {exc}")
            continue
        copied.append(str(dest))
    return copied, problems
