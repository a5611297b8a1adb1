"""The process table's rows made from a frame: one ``ProcessRow`` per (GPU, process),
held as exact tuples (core/store/held_rows.py). The table that shows them, its columns
and its order are core/processes/process_rows.py."""

from __future__ import annotations

from typing import NamedTuple

from vramscope.core.processes.growth import GrowthCache
from vramscope.core.store.held_rows import HeldRows
from vramscope.core.processes.process_columns import moving_figures
from vramscope.core.processes.row_texts import RowTemplates
from vramscope.core.samples import Frame, ProcessIdentity
from vramscope.core.store.store import proc_key


class ProcessRow(NamedTuple):
    """One row, immutable; a NamedTuple because a busy table builds thousands a
    second (a frozen dataclass of this size took 3 us each, a third of the table).
    Tables hold their rows as exact tuples of atoms, which the garbage collector
    stops tracking (core/store/held_rows.py), and make this view of a row when read."""

    key: tuple  # the store's proc key: ("proc", gpu, pid, start_time, "used")
    gpu: int
    pid: int
    start_time: float | None  # with pid, the process's identity
    label: str
    user: str
    used: int | None
    sm: int | None
    age: float | None
    command: str
    visibility: str
    has_agent: bool
    kinds: tuple[str, ...]
    cpu: float | None = None  # host CPU %, 100 = one core
    host_memory: int | None = None  # bytes
    growth: float | None = None  # MiB per minute over the last minutes
    spark: tuple[float, ...] = ()  # device memory over the same minutes (bytes)
    container: str = ""  # 'docker trainer (pid 1 inside)'; '' outside containers
    host: str | None = None  # the machine, when not this one
    host_gpu: int | None = None  # the GPU's index on that machine
    mig: str = ""  # the MIG slice's profile ("3g.40gb"); '' off MIG
    name: str = ""  # 'train.py', 'vLLM · Llama-3-8B' (core/process_names.display_name)
    kin: tuple | None = None  # what it shares with its group (core/process_groups.kin_of)
    members: int = 0  # a group's row: how many processes it stands for (0: a process)
    opened: bool = False  # a group's row whose processes are listed under it; or one of them
    alert: str = ""  # the active alert(s) on the process, for the Name's tooltip
    gpus: str = ""  # a group's row: the GPUs its processes are on ("0, 1")
    inside: tuple = ()  # a group's row: its processes' keys

    @property
    def identity(self) -> ProcessIdentity:
        return (self.pid, self.start_time)


def rows_from_frame(
    frame: Frame | None,
    store=None,
    growth: GrowthCache | None = None,
    templates: RowTemplates | None = None,
) -> HeldRows:
    """The table's rows (ProcessRow, held as exact tuples) in the frame's order; with ``store``, growth and its
    sparkline from the history (through ``growth``, which spreads the work of a
    busy machine over frames; a fresh cache computes every row).

    What a row says of a process (its texts, figures, key) is made once per
    process value: the stream's reader gives the same GpuProcess object again
    while the process does not change (core/stream/deltas.py), so a frame's
    rows cost, per unchanged process, a copy with this frame's age, growth and
    agent mark (16 GPUs x 1,024 processes: one list copy each, no describing)."""
    if frame is None:
        return HeldRows((), ProcessRow)
    if store is not None and growth is None:
        growth = GrowthCache()
    templates = templates if templates is not None else RowTemplates()
    agent_ids = {getattr(a, "identity", None) for a in frame.agents}
    made = [(gpu.processes, templates.templates(gpu, _template)) for gpu in frame.gpus]
    templates.end_frame()
    keys = [template[0] for _procs, made_gpu in made for template in made_gpu]
    figures = growth.update(store, keys, frame.time) if store is not None else {}
    now = frame.time
    get = figures.get
    rows = []
    for procs, made_gpu in made:
        for (used, sm, cpu, host_memory, ident), template in zip(moving_figures(procs), made_gpu):
            row = list(template)
            row[_USED], row[_SM], row[_CPU], row[_HOST_MEMORY] = used, sm, cpu, host_memory
            start = row[_START]
            if start is not None:
                age = now - start
                row[_AGE] = age if age > 0.0 else 0.0
            if agent_ids and not row[_AGENT]:
                row[_AGENT] = ident in agent_ids
            row[_GROWTH], row[_SPARK] = get(row[_KEY], _NO_FIGURES)
            rows.append(tuple(row))
    return HeldRows(tuple(rows), ProcessRow)


_NO_FIGURES = (None, ())
FIELD = {name: i for i, name in enumerate(ProcessRow._fields)}  # where a held row has each field
_KEY, _START, _USED, _SM, _AGE, _AGENT, _CPU, _HOST_MEMORY, _GROWTH, _SPARK = (
    FIELD[name]
    for name in (
        "key",
        "start_time",
        "used",
        "sm",
        "age",
        "has_agent",
        "cpu",
        "host_memory",
        "growth",
        "spark",
    )
)


def _template(gpu, proc, said) -> ProcessRow:
    """A process's row but for this frame's figures, age and growth (set
    per frame: a template holds atoms only, see RowTemplates); ``said``: its RowTexts."""
    info = proc.info
    pid, start = proc.identity
    return ProcessRow(
        key=proc_key(gpu.index, pid, start),
        gpu=gpu.index,
        pid=proc.pid,
        start_time=start,
        label=said.label,
        user=said.user,
        used=proc.used,
        sm=proc.sm,
        age=None,
        command=said.command,
        visibility=info.visibility if info is not None else "unknown",
        has_agent=proc.has_agent,
        kinds=proc.kinds,
        cpu=proc.cpu_percent,
        host_memory=proc.host_memory,
        host=gpu.host,
        host_gpu=gpu.host_index,
        container=said.container,
        mig=_slice_text(gpu, proc),
        name=said.name,
        kin=said.kin,
    )


def _slice_text(gpu, proc) -> str:
    mig = gpu.slice_of(proc)
    return "" if mig is None else (mig.profile or "MIG")
