"""Processes that belong together, shown as one: ``ray::RolloutWorker ×10``.

Qt-free; the stacked view, its legend and the process table all group
through ``kin_of`` and ``units``, so what is one group is decided once.

Two processes are one group when a user would call them one thing: the same
user, the same parent process and the same command line -- the workers a
launcher forks or spawns with one argv (Ray's workers under their raylet,
``torchrun``'s ranks, which differ only in their environment, a server's
gunicorn/uvicorn/vLLM workers), where an argument that only numbers the worker
(``--rank 3``, ``--local_rank=1``, ``--worker-id 4``: ``RANK_OPTION``) may differ. Processes whose parent is gone or is init
(daemonised, re-parented) group by user and command line alone. Not one
group: two runs of the same script from two shells (different parents),
Jupyter kernels (each has its own connection file on its command line),
two users' processes, processes of two machines, a process without a readable command line or parent.
The processes of one Slurm job are one group, whatever their command lines
(``slurm job 12345 · alice · train ×4``). A process
with an active alert always stands on its own, and a "group" of one is just
its process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from vramscope.core.processes.process_names import short_name
from vramscope.core.samples import ProcessInfo

GROUP = "group"  # the first element of a group's unit key: (GROUP, kin)
TIMES = "×"
# options whose value numbers one worker of many: torch.distributed.launch's
# --local_rank / --local-rank, a script's own --rank, --worker-id, --shard ...
RANK_OPTION = re.compile(
    r"--?(?:(?:local|node|global)[-_]?)?rank|--?(?:worker|shard|replica|proc|process|gpu|device)"
    r"(?:[-_]?(?:id|idx|index|rank|num))?|--?(?:index|idx)",
    re.IGNORECASE,
)
_NUMBERED = "#"


def without_rank(cmdline: tuple[str, ...]) -> tuple[str, ...]:
    """``cmdline`` with the value of every RANK_OPTION that is a number written as #."""
    out = list(cmdline)
    for i, arg in enumerate(out):
        name, eq, value = arg.partition("=")
        if not RANK_OPTION.fullmatch(name):
            continue
        if eq and value.isdigit():
            out[i] = f"{name}={_NUMBERED}"
        elif not eq and i + 1 < len(out) and out[i + 1].isdigit():
            out[i + 1] = _NUMBERED
    return tuple(out)


def kin_of(info: ProcessInfo | None, host: str | None = None) -> tuple | None:
    """What a process shares with the others of its group; None: never grouped.
    ``host``: the machine it runs on (None: this one) -- processes of two machines
    are never one group, whatever their parents' pids."""
    if info is not None and info.slurm is not None:  # a job's processes are the job
        return (f"slurm job {info.slurm.label}", info.user, ("slurm", info.slurm.job_id), (), host)
    if info is None or not info.cmdline or info.user is None or info.ppid is None:
        return None
    parent = info.ppid if info.ppid > 1 and info.parent_alive is not False else None
    return (short_name(info) or info.cmdline[0], info.user, parent, without_rank(tuple(info.cmdline)), host)


def group_key(kin: tuple) -> tuple:
    return (GROUP, kin)


def is_group(key) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and key[0] == GROUP


def group_name(key: tuple, members: int) -> str:
    """'ray::RolloutWorker ×10'."""
    return f"{key[1][0]} {TIMES}{members}"


def units(
    members: Iterable[tuple[tuple, tuple | None]],
    alone: set | frozenset = frozenset(),
    opened: set | frozenset = frozenset(),
) -> dict[tuple, tuple[tuple, ...]]:
    """unit key -> the process keys it stands for, in the order given.

    ``members``: (process key, its kin or None); ``alone``: process keys drawn
    on their own whatever their kin (an active alert, the selection);
    ``opened``: group keys the user expanded (their processes stand alone).
    A process on its own is its own unit: {key: (key,)}.

    The keys come back in tuples, which the garbage collector stops tracking
    (a list it tracks always): a view that keeps the answer until its next
    update (the timeline) would otherwise hold 16k lists on a big box, each
    update's promoted to the oldest generation and counted towards its next
    full collection."""
    out: dict[tuple, tuple] = {}
    more: dict[tuple, list] = {}  # a unit of more than one process: its keys while gathered
    for key, kin in members:
        unit = key if kin is None or key in alone else group_key(kin)
        first = out.get(unit)
        if first is None:
            out[unit] = (key,)
        else:
            more.setdefault(unit, [first[0]]).append(key)
    for unit, keys in more.items():
        out[unit] = tuple(keys)
    for unit in [u for u, keys in out.items() if is_group(u) and (len(keys) == 1 or u in opened)]:
        for key in out.pop(unit):
            out[key] = (key,)
    return out


def job_ranks(frame) -> dict[tuple, tuple]:
    """(machine, pid) -> the (GpuSample, GpuProcess) of its job: the processes of one live launcher with
    one command line (up to rank arguments), two or more -- ``torchrun``'s ranks, a
    Ray worker pool. Processes alone under their parent are left out (most are, and
    their kin is not worked out)."""
    by_parent: dict[tuple, list] = {}
    for gpu, proc in frame.all_processes():
        info = proc.info
        if info is None or info.ppid is None or info.ppid <= 1 or info.parent_alive is False:
            continue
        by_parent.setdefault((gpu.host, info.ppid), []).append((gpu, proc))
    out: dict[tuple, tuple[int, ...]] = {}
    for members in by_parent.values():
        if len({proc.pid for _, proc in members}) < 2:
            continue
        kins: dict[tuple, dict] = {}
        host = members[0][0].host
        for gpu, proc in members:
            kin = kin_of(proc.info, host)
            if kin is not None:
                kins.setdefault(kin, {})[proc.pid] = (gpu, proc)
        for procs in kins.values():
            if len(procs) > 1:
                ranks = tuple(procs[pid] for pid in sorted(procs))
                out.update({(host, pid): ranks for pid in procs})
    return out
