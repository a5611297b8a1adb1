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

from vramscope.core.processes.containers import container_text
from vramscope.core.processes.process_columns import described_by
from vramscope.core.processes.process_groups import kin_of
from vramscope.core.processes.process_names import display_name, process_label
from vramscope.core.processes.process_text import command_text, user_text


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
        # GPU index -> (its machine, {process identity: its row's template},
        #               {identity: what the template was made from: its description's
        #               key, process_columns.described_by}, {identity: (its agent
        #               mark, its kinds)})
        self._rows: dict = {}
        self._next: dict = {}  # the same for the frame being made (the processes gone are let go)

    def templates(self, gpu, make) -> list[tuple]:
        """Per process of ``gpu``, in its order, its row's template: ``make(gpu, proc,
        texts)`` as an exact tuple, made again only when the process's description
        changed (its description's key, kinds, agent, pid): a process whose figures
        alone moved keeps its template; the frame's figures are read from the process.

        ``make`` gives atoms only (str, numbers, None, tuples of them), and what a
        template is kept with is atoms too: the garbage collector stops tracking
        such tuples, and the table holds no process values of its own (a MIG
        process's aside), so a big box's 16k templates are not walked by every full
        collection, nor keep an older frame's processes alive. An unchanged process
        costs no new object (its identity is the GpuProcess's): 16k new tuples a
        frame would be 16k more allocations towards the next collection."""
        place = (gpu.host, gpu.host_index)
        was = self._rows.get(gpu.index)
        held, made_from, marks = (
            (was[1], was[2], was[3]) if was is not None and was[0] == place else ({}, {}, {})
        )
        now: dict = {}
        now_from: dict = {}
        now_marks: dict = {}
        out = []
        procs = gpu.processes
        for i, (ident, has_agent, kinds, mig_uuid, value, description) in enumerate(described_by(procs)):
            template = held.get(ident)
            source = made_from.get(ident)
            mark = marks.get(ident)  # (agent mark, kinds): apart from the template, not
            # a tuple holding it (a collection that met such a pair before the new
            # template it holds kept it tracked, and promoted it: 16k on a big box)
            if (
                template is None
                or mark is None
                or mark[0] != has_agent
                or mark[1] != kinds
                or not (source is value or (source is description and mig_uuid is None))
            ):
                proc = procs[i]  # (made only here: a big box's processes are held as rows)
                template = tuple(make(gpu, proc, row_texts(proc, gpu.host)))
                mark = (has_agent, kinds)
                # (a MIG process: its own value, its slice's text being made from it)
                source = value if mig_uuid is not None else description
            now[ident] = template
            now_from[ident] = source
            now_marks[ident] = mark
            out.append(template)
        self._next[gpu.index] = (place, now, now_from, now_marks)
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
