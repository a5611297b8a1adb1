"""Copy the OOM snapshots the agent saved (memory_viz pickles) next to an export.

The agent writes ``torch.cuda.memory._snapshot()`` with pickle protocol 4 at
the moment of an OOM and puts the path in the OOM event (``snapshot_path``).
The files are copied byte for byte -- never unpickled here, since loading a
pickle runs code -- after a header check that they are pickles of protocol
2..5, which is what pytorch.org/memory_viz reads.
"""

from __future__ import annotations

import os
import pathlib
import shutil

from vramscope.core.session.reader import SessionReader

PATH_KEYS = ("snapshot_path", "snapshot", "pickle_path")


def snapshot_paths(reader: SessionReader) -> list[tuple[float, int | None, str]]:
    """(time, pid, path) of every snapshot an OOM event names."""
    procs = reader.processes()
    out = []
    for e in reader.events():
        if e["kind"] != "oom" or not isinstance(e["data"], dict):
            continue
        for key in PATH_KEYS:
            value = e["data"].get(key)
            if isinstance(value, str) and value:
                rec = procs.get(e["proc"])
                out.append((e["t"], rec.pid if rec else None, value))
                break
    return out


def looks_like_pickle(path: pathlib.Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(2)
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def copy_snapshots(reader: SessionReader, directory: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Copy into ``directory`` (0700, files 0600); returns (copied, problems)."""
    copied, problems = [], []
    found = snapshot_paths(reader)
    if not found:
        return copied, problems
    directory = pathlib.Path(directory)
    for t, pid, src in found:
        path = pathlib.Path(src)
        if not path.is_file():
            problems.append(f"OOM snapshot {src} (pid {pid}) is no longer on this machine")
            continue
        if not looks_like_pickle(path):
            problems.append(f"OOM snapshot {src} is not a pickle; not copied")
            continue
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        dest = directory / f"oom-pid{pid}-t{t:.0f}.pickle"
        shutil.copyfile(path, dest)
        os.chmod(dest, 0o600)
        copied.append(str(dest))
    return copied, problems
