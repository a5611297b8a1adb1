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
    """identity -> (info, host, RowTexts), and per GPU each process's row
    template; one per table (used by one thread at a time)."""

    def __init__(self):
        self._held: dict = {}
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
                entry = [*make(gpu, proc, self.texts(proc, gpu.host)), proc]
            else:
                entry[-1] = proc
            now[ident] = entry
            out.append(entry)
        self._next[gpu.index] = (place, now)
        return out

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
        """The end of a frame: keep the row templates of its processes only, and
        forget every description when far more are held than ``count`` (those that ended)."""
        if len(self._held) > 2 * count + 1024:
            self._held.clear()
        self._rows, self._next = self._next, {}


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
