"""A process's environment, read from ``/proc/<pid>/environ`` (proc(5): NUL-separated
``KEY=value`` entries, readable by the process's own user and root).

What the process details (sources/machine/processes.py: a Jupyter kernel's session) and the
Slurm job names (sources/machine/slurm.py) read from it.
"""

from __future__ import annotations

from vramscope.sources.machine.containers import PROC

MAX_ENVIRON = 1 << 16  # bytes read: the first 64 KiB


def read_environ(pid: int, proc_root: str = PROC) -> dict[str, str]:
    """A process's environment (its first 64 KiB; {} where not readable: another user's)."""
    try:
        with open(f"{proc_root}/{pid}/environ", "rb") as f:
            raw = f.read(MAX_ENVIRON)
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out
