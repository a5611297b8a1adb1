"""The audit log of processes vramscope ended or was asked to end: one JSON line
per action in the user's log directory, written 0600 and never through a link
(core/safe_io/safe_write.py); read back whole, a torn line skipped."""

from __future__ import annotations

import json
import os
import pathlib

from vramscope.core.safe_io import safe_write


def default_audit_path() -> pathlib.Path:
    import platformdirs

    return pathlib.Path(platformdirs.user_log_dir("vramscope", appauthor=False)) / "actions.jsonl"


def append_json_line(path: pathlib.Path, entry: dict) -> None:
    """One JSON line, appended; the file is created 0600 in a 0700 directory
    (never through another user's link, never into a FIFO: core/safe_io/safe_write.py)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = safe_write.open_append(path)
    try:
        os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)


def read_audit_log(path: pathlib.Path | None = None) -> list[dict]:
    path = path or default_audit_path()
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn line is skipped, the rest kept
    return out
