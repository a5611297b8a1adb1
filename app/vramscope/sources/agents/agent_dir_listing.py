"""The agent files in one directory, read again only when the directory changed.

The agent client looks for agent sockets and final dumps every pass (once a
second): a scandir and one lstat per agent file. A directory's modification
time changes whenever a name in it is created, removed or renamed (POSIX
``stat``: "st_mtime ... changed by ... creat(), mkdir(), rename(), unlink()"),
and a socket or a regular file cannot change type without its name going and
coming back, so a listing stays true while the directory's (device, inode,
mtime, ctime) stay the same. Timestamps are taken from a coarse clock: a name
created in the same tick as the listing would leave the mtime as it was, so a
listing is trusted only when it was read at least ``SETTLED`` seconds after the
directory last changed (as git does for its index: "racy" entries are checked
again).
"""

from __future__ import annotations

import itertools
import os
import stat
import time

from vramscope.agent.serving import paths

MAX_DIR_ENTRIES = 4096  # names looked at per directory and pass
SETTLED = 1.0  # seconds between a directory's last change and a listing kept


def read(directory: str) -> list[tuple[int, int, str, str, int]]:
    """(pid, ticks, suffix, path, mode) of each agent-named entry (not followed when
    a link), at most MAX_DIR_ENTRIES names looked at; raises OSError."""
    out = []
    with os.scandir(directory) as entries:  # (closed at once, not when collected)
        for entry in itertools.islice(entries, MAX_DIR_ENTRIES):
            parsed = paths.parse_name(entry.name)
            if parsed is None:
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            out.append((*parsed, entry.path, mode))
    return out


class Listings:
    """``read`` for the monitor's own directories, kept while they do not change."""

    def __init__(self, clock=time.time):
        self._clock = clock
        self._held: dict[str, tuple[tuple, list]] = {}  # directory -> (its stat key, listing)

    def read(self, directory: str) -> list[tuple[int, int, str, str, int]]:
        st = os.lstat(directory)
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        held = self._held.get(directory)
        if held is not None and held[0] == key:
            return held[1]
        now = self._clock()
        listing = read(directory)
        if stat.S_ISDIR(st.st_mode) and now - max(st.st_mtime, st.st_ctime) >= SETTLED:
            self._held[directory] = (key, listing)
        else:
            self._held.pop(directory, None)
        return listing
