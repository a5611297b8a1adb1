"""A process's table texts, made once per process description.

The label, user, command, container, display name and kin of a row depend only
on the process's pid, its ProcessInfo and its machine; the stream's reader
(core/stream/deltas.py) keeps the same ProcessInfo object while a process's
description does not change, so on a big box (16 GPUs x 1,024 processes) the
table's rows are rebuilt each frame without describing 16k processes again.
"""

from __future__ import annotations

from typing import NamedTuple

from vramscope.core.containers import container_text
from vramscope.core.process_groups import kin_of
from vramscope.core.process_names import display_name, process_label
from vramscope.core.process_text import command_text, user_text


class RowTexts(NamedTuple):
    label: str
    user: str
    command: str
    container: str
    name: str
    kin: tuple | None


class RowTextCache:
    """identity -> (info, host, RowTexts); one per table (used by one thread at a time)."""

    def __init__(self):
        self._held: dict = {}

    def texts(self, proc, host: str | None) -> RowTexts:
        info = proc.info
        held = self._held.get(proc.identity)
        if held is not None and held[0] is info and held[1] == host:
            return held[2]
        label = process_label(proc)
        made = RowTexts(
            label,
            user_text(proc),
            command_text(proc),
            container_text(info),
            display_name(info) or label,
            kin_of(info, host),
        )
        self._held[proc.identity] = (info, host, made)
        return made

    def keep_only(self, count: int) -> None:
        """Forget every process when far more are held than ``count`` (those that ended)."""
        if len(self._held) > 2 * count + 1024:
            self._held.clear()
