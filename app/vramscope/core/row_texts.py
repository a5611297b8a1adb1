"""A process's table row, described once per process description.

The label, user, command, container, display name and kin of a row depend only
on the process's pid, its ProcessInfo and its machine; the stream's reader
(core/stream/delta_reader.py) keeps the same ProcessInfo object, and the same
GpuProcess object, while a process does not change, so on a big box (16 GPUs
x 1,024 processes) the table's rows are made each frame from a template per
process, without describing 16k processes again.
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


class RowTemplates:
    """Per GPU each process's row template; one per table (used by one thread at a time)."""

    def __init__(self):
        # GPU index -> (its machine, {identity: its row's template, the process last})
        self._rows: dict = {}
        self._next: dict = {}  # the same for the frame being made (the processes gone are let go)

    def templates(self, gpu, make) -> list:
        """Per process of ``gpu``, in its order, its row's template: the fields of
        ``make(gpu, proc, texts)`` with the process last (one list a process, so a
        big box's table holds few objects for the garbage collector to walk), made
        again only when the process's description changed (its ProcessInfo object,
        kinds, agent, pid): a process whose figures alone moved keeps its template;
        the frame's figures are read from the process."""
        place = (gpu.host, gpu.host_index)
        was = self._rows.get(gpu.index)
        held = was[1] if was is not None and was[0] == place else {}
        now: dict = {}
        out = []
        for proc in gpu.processes:
            ident = proc.identity
            entry = held.get(ident)
            if entry is None or (entry[-1] is not proc and not _same_description(entry[-1], proc)):
                entry = [*make(gpu, proc, row_texts(proc, gpu.host)), proc]
            else:
                entry[-1] = proc
            now[ident] = entry
            out.append(entry)
        self._next[gpu.index] = (place, now)
        return out

    def end_frame(self) -> None:
        """Keep the row templates of this frame's processes only."""
        self._rows, self._next = self._next, {}


def row_texts(proc, host: str | None) -> RowTexts:
    """What a row says of a process (made once per description: see ``templates``)."""
    info = proc.info
    label = process_label(proc)
    return RowTexts(
        label,
        user_text(proc),
        command_text(proc),
        container_text(info),
        display_name(info) or label,
        kin_of(info, host),
    )


def _same_description(was, now) -> bool:
    """Whether two values of one process differ at most in their moving figures
    (memory, SM %, CPU %, host memory): what a stream delta's columns change."""
    return (
        was.info is now.info
        and now.mig_uuid is None
        and was.mig_uuid is None
        and was.pid == now.pid
        and was.has_agent == now.has_agent
        and was.kinds == now.kinds
    )
