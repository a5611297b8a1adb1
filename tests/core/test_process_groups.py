"""What is one group of processes (`ray::RolloutWorker ×10`, `torchrun`'s ranks,
a server's workers) and what is not, in the table and the stacked view."""

from __future__ import annotations

import gc

from vramscope.core.processes.process_groups import group_name, is_group, kin_of, units
from vramscope.core.processes.process_rows import TableBuilder, TableOrder, name_text, rows_from_frame
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.processes.stacking import PROMOTED, choose_layers
from vramscope.core.units import GiB


def info(pid, cmd, ppid=100, user="alice", parent_alive=True):
    return ProcessInfo(
        pid=pid,
        start_time=1000.0 + pid,
        user=user,
        name=cmd[0],
        cmdline=cmd,
        ppid=ppid,
        parent_alive=parent_alive,
    )


RAY = ("ray::RolloutWorker",)
RANK = ("/venv/bin/python", "-u", "train.py", "--lr", "3e-4")


def grouped(infos, alone=()):
    found = units(((i.pid, kin_of(i)) for i in infos), set(alone))
    return sorted(sorted(v) for v in found.values())


def test_workers_of_one_parent_with_one_command_line_are_one_group():
    workers = [info(41000 + i, RAY, ppid=40995) for i in range(10)]
    found = units(((w.pid, kin_of(w)) for w in workers))
    assert len(found) == 1
    ((unit, members),) = found.items()
    assert is_group(unit) and len(members) == 10
    # what a view keeps until its next update: tuples, which the collector lets go
    # (a big box's 16k units of one process each were 16k lists in its oldest generation)
    alone = units((41000 + i, None) for i in range(100))
    gc.collect()
    assert not any(gc.is_tracked(keys) for keys in [*alone.values(), members])
    assert group_name(unit, len(members)) == "ray::RolloutWorker ×10"
    ranks = [info(500 + r, RANK, ppid=499) for r in range(8)]  # torchrun's children
    assert grouped(ranks) == [[500 + r for r in range(8)]]


def test_what_is_not_one_group():
    # the same script started twice from two shells: two parents, two jobs
    assert grouped([info(1, RANK, ppid=10), info(2, RANK, ppid=20)]) == [[1], [2]]
    # two Jupyter kernels of one server: each has its own connection file
    k = ("python", "-m", "ipykernel_launcher", "-f")
    assert grouped([info(3, k + ("kernel-a.json",)), info(4, k + ("kernel-b.json",))]) == [[3], [4]]
    # two users' workers under one daemon
    assert grouped([info(5, RAY, user="alice"), info(6, RAY, user="bob")]) == [[5], [6]]
    # no command line readable (another user's process): never grouped
    assert grouped([ProcessInfo(pid=7, user="bob"), ProcessInfo(pid=8, user="bob")]) == [[7], [8]]
    # a parent not known: two runs of one command are not taken for one job
    assert grouped([info(10, RANK, ppid=None), info(11, RANK, ppid=None)]) == [[10], [11]]
    # a group of one is its process
    assert grouped([info(9, RAY)]) == [[9]]
    # workers of one launcher's pid on two machines (--host lab-a --host lab-b)
    a, b = info(30, RAY, ppid=29), info(31, RAY, ppid=29)
    assert sorted(
        sorted(v) for v in units([(a.pid, kin_of(a, "lab-a")), (b.pid, kin_of(b, "lab-b"))]).values()
    ) == [[30], [31]]


def test_daemonised_copies_group_by_command_line_and_an_alerted_process_stands_alone():
    orphans = [info(20 + i, RAY, ppid=1) for i in range(3)]
    assert grouped(orphans) == [[20, 21, 22]]
    assert grouped(orphans, alone={21}) == [[20, 22], [21]]
    assert grouped(orphans, alone={20, 21}) == [[20], [21], [22]]  # the one left is itself


def _frame(procs):
    gpu = GpuSample(
        index=0, uuid="GPU-0", name="A6000", total=48 * GiB, used=40 * GiB, processes=tuple(procs)
    )
    return Frame(time=5000.0, gpus=(gpu,))


def test_the_table_folds_a_group_into_one_row_and_lists_it_when_opened():
    workers = [
        GpuProcess(pid=41000 + i, used=3 * GiB, info=info(41000 + i, RAY, ppid=40995)) for i in range(10)
    ]
    alone = GpuProcess(
        pid=38211, used=9 * GiB, info=info(38211, ("python", "-m", "embed_server", "--model", "bge-large"), 1)
    )
    rows = rows_from_frame(_frame(workers + [alone]))
    table = TableBuilder.rearrange(rows, TableOrder(), ())
    names = [name_text(r) for r in table.rows]
    assert names == ["▸ ray::RolloutWorker ×10", "embed_server · bge-large"]
    assert table.rows[0].used == 30 * GiB and table.rows[0].members == 10
    # a worker selected in the plot is found on its group's row
    assert table.row_of[workers[3].identity and rows[3].key] == 0
    opened = TableBuilder.rearrange(rows, TableOrder(opened=frozenset({table.rows[0].key})), ())
    assert len(opened.rows) == 12 and opened.rows[1].pid in {w.pid for w in workers}
    # a worker with an active alert is its own row, marked, the alert in its tooltip
    marked = TableBuilder.rearrange(rows, TableOrder(), (), {workers[0].identity: "Idle holder"})
    texts = [name_text(r) for r in marked.rows]
    assert "▸ ray::RolloutWorker ×9" in texts and "⚠ ray::RolloutWorker" in texts


def test_others_is_not_the_largest_band():
    # two on their own, then small ones whose sum would be the largest band
    current = {("big", i): 3 * GiB for i in range(2)}
    current.update({("small", i): 1 * GiB for i in range(6)})
    own, rest = choose_layers(current, list(current), set(), False, shown=2)
    assert rest and sum(current[k] for k in rest) <= max(current[k] for k in own)
    assert set(own) | set(rest) == set(current)
    # hundreds of distinct small processes: a few more bands, never hundreds
    box = {("p", i): (64 + i) << 20 for i in range(320)}
    own, rest = choose_layers(box, list(box), set(), False, shown=6)
    assert len(own) <= 6 + PROMOTED and len(rest) >= 300


def test_workers_that_differ_only_by_a_rank_argument_are_one_group():
    ray = [info(700 + r, ("python", "ray_worker.py", "--rank", str(r)), ppid=699) for r in range(4)]
    assert grouped(ray) == [[700, 701, 702, 703]]
    local = [info(710 + r, ("python", "worker.py", f"--local_rank={r}"), ppid=709) for r in range(2)]
    ids = [
        info(720 + r, ("python", "serve.py", "--worker-id", str(r), "--port", "80"), ppid=719)
        for r in range(3)
    ]
    assert grouped(local) == [[710, 711]] and grouped(ids) == [[720, 721, 722]]
    assert group_name(next(iter(units((i.pid, kin_of(i)) for i in ray))), 4) == "ray_worker.py ×4"
    # what is not a rank: other options' values, other scripts, a rank that is not a number
    assert grouped(
        [info(730, ("python", "train.py", "--lr", "3")), info(731, ("python", "train.py", "--lr", "4"))]
    ) == [[730], [731]]
    assert grouped(
        [info(732, ("python", "a.py", "--rank", "0")), info(733, ("python", "b.py", "--rank", "1"))]
    ) == [[732], [733]]
    assert grouped(
        [info(734, ("python", "w.py", "--rank", "auto")), info(735, ("python", "w.py", "--rank", "1"))]
    ) == [[734], [735]]
    # the number of something else after a rank option's name is kept (`--ranks 4` is not one)
    assert grouped(
        [info(736, ("python", "w.py", "--ranks", "4")), info(737, ("python", "w.py", "--ranks", "8"))]
    ) == [[736], [737]]


def test_a_groups_sm_is_its_busiest_process_said_so_not_a_sum():
    workers = [
        GpuProcess(pid=800 + i, used=2 * GiB, sm=sm, info=info(800 + i, RAY, ppid=799))
        for i, sm in enumerate((90, 100, 100, 43))
    ]
    table = TableBuilder.rearrange(rows_from_frame(_frame(workers)), TableOrder(), ())
    (row,) = table.rows
    assert row.members == 4 and row.sm == 100
    from vramscope.core.processes.process_rows import COL, COLUMNS

    assert COLUMNS[COL["SM %"]].text(row) == "max 100"
    opened = TableBuilder.rearrange(
        rows_from_frame(_frame(workers)), TableOrder(opened=frozenset({row.key})), ()
    )
    members = sorted(COLUMNS[COL["SM %"]].text(r) for r in opened.rows[1:])
    assert members == ["100", "100", "43", "90"]  # each process's own figure
