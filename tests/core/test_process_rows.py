"""The process table's rows, Qt-free: order, filter, users together, and the
growth figures a busy machine gets over several frames."""

from __future__ import annotations

import pytest
import numpy as np

from vramscope.core.processes.growth import GROWTH_REFRESH, ROW_BUDGET, GrowthCache
from vramscope.core.processes.process_rows import (
    COLUMNS,
    ProcessRow,
    TableBuilder,
    TableOrder,
    arrange,
    rows_from_frame,
)
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import Store, proc_key
from vramscope.core.units import GiB, MiB


def _row(pid: int, used: int | None, user: str, command: str = "python train.py") -> ProcessRow:
    return ProcessRow(
        key=proc_key(0, pid, 1.0),
        gpu=0,
        pid=pid,
        start_time=1.0,
        label=f"p{pid}",
        user=user,
        used=used,
        sm=None,
        age=None,
        command=command,
        visibility="visible",
        has_agent=False,
        kinds=("compute",),
    )


ROWS = [
    _row(1, 2 * GiB, "bob"),
    _row(2, None, "alice"),
    _row(3, 8 * GiB, "alice"),
    _row(4, 2 * GiB, "carol", "python serve.py"),
    _row(5, 5 * GiB, "bob"),
]


def test_memory_sorts_largest_first_with_n_a_below_every_figure_and_ties_in_frame_order():
    shown = [r.pid for r in arrange(ROWS, TableOrder())]
    assert shown == [3, 5, 1, 4, 2]
    assert [r.pid for r in arrange(ROWS, TableOrder(descending=False))] == [2, 1, 4, 5, 3]


def test_grouped_by_user_users_stay_a_to_z_whichever_way_the_column_sorts():
    down = arrange(ROWS, TableOrder(group_by_user=True))
    assert [(r.user, r.pid) for r in down] == [
        ("alice", 3),
        ("alice", 2),
        ("bob", 5),
        ("bob", 1),
        ("carol", 4),
    ]
    up = arrange(ROWS, TableOrder(group_by_user=True, descending=False))
    assert [r.user for r in up] == ["alice", "alice", "bob", "bob", "carol"]
    assert [r.pid for r in up][:2] == [2, 3]


def test_the_filter_matches_any_column_in_any_case():
    assert [r.pid for r in arrange(ROWS, TableOrder(filter="SERVE"))] == [4]
    assert [r.pid for r in arrange(ROWS, TableOrder(filter="alice"))] == [3, 2]
    assert arrange(ROWS, TableOrder(filter="nobody")) == []


def test_a_built_table_knows_each_row_and_keeps_every_row_before_the_filter():
    table = TableBuilder.rearrange(ROWS, TableOrder(filter="bob"), ())
    assert [r.pid for r in table.rows] == [5, 1]
    assert table.row_of[proc_key(0, 1, 1.0)] == 1 and proc_key(0, 3, 1.0) not in table.row_of
    assert len(table.source) == 5
    assert "Container" not in table.used_columns  # no row runs in a container
    assert {c.name for c in COLUMNS if c.when_used} >= {"Host", "MIG", "Container"}


def _busy_store(n: int, seconds: int = 120):
    """n processes on one GPU, process 0 growing 60 MiB/min, the others flat."""
    store = Store(max_series=n + 64)
    infos = [
        ProcessInfo(pid=1000 + i, start_time=1.0, user="u", name="python", cmdline=("python", f"job{i}.py"))
        for i in range(n)
    ]
    for s in range(seconds):
        procs = tuple(
            GpuProcess(pid=info.pid, used=GiB + (s * MiB if i == 0 else 0), info=info)
            for i, info in enumerate(infos)
        )
        store.append(
            Frame(time=float(s), gpus=(GpuSample(index=0, total=80 * GiB, used=n * GiB, processes=procs),))
        )
    return store


def test_a_small_table_gets_every_growth_figure_at_once():
    store = _busy_store(20)
    rows = rows_from_frame(store.latest, store)
    growth = {r.pid: r.growth for r in rows}
    assert abs(growth[1000] - 60.0) < 0.5 and growth[1001] == 0.0
    assert all(len(r.spark) >= 2 for r in rows)


@pytest.mark.slow
def test_a_busy_machine_gets_its_growth_figures_over_a_few_frames_never_all_at_once():
    n = 3 * ROW_BUDGET
    store = _busy_store(n, seconds=90)
    keys = [proc_key(0, 1000 + i, 1.0) for i in range(n)]
    cache = GrowthCache()
    worked = []
    original = store.series

    def counting(key, since=None):
        worked.append(key)
        return original(key, since)

    store.series = counting
    first = cache.update(store, keys, 89.0)
    assert len(worked) == ROW_BUDGET  # the budget, not every row
    assert len(first) == ROW_BUDGET
    for frame in range(1, 3):
        cache.update(store, keys, 89.0 + frame)
    figures = cache.update(store, keys, 92.0)
    assert len(figures) == n  # every row has its figure within a few frames
    worked.clear()
    cache.update(store, keys, 92.5)
    assert worked == []  # nothing is due again before GROWTH_REFRESH
    cache.update(store, keys, 92.0 + GROWTH_REFRESH + 3)
    assert 0 < len(worked) <= ROW_BUDGET  # the oldest first, within the budget
    worked.clear()
    cache.update(store, keys, 50.0)  # a recorded session scrubbed back: worked out again
    assert len(worked) == ROW_BUDGET


def test_stacked_others_from_the_gpu_sum_equals_the_sum_of_the_grouped_processes():
    from vramscope.core.processes.stacking import align
    from vramscope.core.store.store import PROCESSES_USED, gpu_key

    store = Store()
    infos = [ProcessInfo(pid=10 + i, start_time=1.0) for i in range(12)]
    for s in range(60):
        procs = tuple(
            GpuProcess(pid=info.pid, used=None if i == 3 else (i + 1) * GiB + s * MiB, info=info)
            for i, info in enumerate(infos)
            if not (i == 5 and s >= 30)
        )  # one ends
        store.append(
            Frame(time=float(s), gpus=(GpuSample(index=0, total=80 * GiB, used=GiB, processes=procs),))
        )
    base, _ = store.series(gpu_key(0, "used"))
    everyone = align(base, *store.series(gpu_key(0, PROCESSES_USED)))
    by_hand = sum(align(base, *store.series(k)) for k in store.process_keys(0))
    assert np.array_equal(everyone, by_hand)
    points = store.process_points(0)
    assert len(points) == 12 and np.isnan(points[proc_key(0, 13, 1.0)][1])
    assert points[proc_key(0, 15, 1.0)][0] == 29.0  # ended: its last time


def test_a_process_whose_description_changes_is_described_anew_in_the_next_table():
    from vramscope.core.processes.process_rows import TableBuilder, TableOrder

    def frame(t, cmdline, user="alice"):
        info = ProcessInfo(pid=7, start_time=1.0, user=user, name="python", cmdline=cmdline)
        gpu = GpuSample(
            index=0,
            name="g",
            uuid="GPU-0",
            total=GiB,
            used=MiB,
            processes=(GpuProcess(pid=7, used=MiB, info=info),),
        )
        return Frame(time=t, gpus=(gpu,))

    builder = TableBuilder()
    first = builder.build(frame(1.0, ("python", "train.py")), None, TableOrder()).rows[0]
    again = builder.build(frame(2.0, ("python", "train.py")), None, TableOrder()).rows[0]
    changed = builder.build(frame(3.0, ("python", "serve.py"), user="bob"), None, TableOrder()).rows[0]
    assert (
        (first.label, first.command, first.user)
        == (again.label, again.command, again.user)
        == ("train.py (7)", "python train.py", "alice")
    )
    assert (changed.label, changed.command, changed.user) == ("serve.py (7)", "python serve.py", "bob")


def test_a_table_fed_frame_after_frame_shows_each_frames_figures_and_each_change_of_description():
    """The rows of a process whose figures alone moved (a stream delta's columns)
    reuse what describes it; its memory, SM %, CPU % and age are this frame's, and
    a new description (another command line) is shown at once."""
    info = ProcessInfo(pid=7, start_time=100.0, user="ann", name="python", cmdline=("python", "a.py"))
    first = GpuProcess(pid=7, used=1 * GiB, sm=10, info=info, cpu_percent=50.0)
    builder = TableBuilder()

    def shown(proc, t):
        frame = Frame(time=t, gpus=(GpuSample(index=0, processes=(proc,)),))
        (row,) = builder.build(frame, None, TableOrder()).rows
        return row

    before = shown(first, 160.0)
    moved = first.with_figures(3 * GiB, None, 75.0, 2 * GiB)
    after = shown(moved, 220.0)
    assert (after.used, after.sm, after.cpu, after.host_memory, after.age) == (
        3 * GiB,
        None,
        75.0,
        2 * GiB,
        120.0,
    )
    assert (before.used, before.sm, before.age) == (1 * GiB, 10, 60.0)
    assert after.command == before.command == "python a.py"
    renamed = GpuProcess(
        pid=7, used=3 * GiB, info=ProcessInfo(pid=7, start_time=100.0, user="ann", cmdline=("python", "b.py"))
    )
    assert shown(renamed, 230.0).command == "python b.py"


def test_a_built_tables_rows_are_nothing_the_garbage_collector_walks_and_read_as_rows():
    """A busy box's table (16k rows) held as named tuples was 16k more objects
    every full collection walks (issue 28's stalls): its rows are exact tuples of
    atoms, untracked once collected, and read as ProcessRow all the same."""
    import gc

    store = _busy_store(20)
    builder = TableBuilder()
    table = builder.build(store.latest, store, TableOrder())
    alerts = {(1000, 1.0): "Growth"}
    alerted = builder.rearrange(table.source, TableOrder(filter="python"), (), alerts)
    gc.collect()
    gc.collect()
    for t in (table, alerted):
        held = t.rows.raw + t.source.raw
        assert held and not any(gc.is_tracked(row) for row in held)
    row = next(r for r in alerted.rows if r.pid == 1000)
    assert isinstance(row, ProcessRow) and row.alert == "Growth" and row.identity == (1000, 1.0)
    assert abs(row.growth - 60.0) < 0.5 and len(row.spark) >= 2
