"""The process table repaints only the cells that read differently: a second
that only ages every process repaints the Age column, not the table (the whole
table repainted every second was the window's largest cost at rest)."""

from __future__ import annotations

from vramscope.core.processes.process_rows import COL, TableBuilder, TableOrder
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.units import GiB, MiB
from vramscope.ui.processes.process_model import ProcessTableModel
from vramscope.ui.processes.process_table import ProcessTable
from vramscope.ui.qt.pens import ColourBook

from .frames import T0, frame_at


def _signalled(model, frame, show=None) -> set[tuple[int, int]]:
    """The (row, column) cells ``model`` says changed when ``frame`` is shown
    (by ``show``; the model alone by default)."""
    cells: set[tuple[int, int]] = set()

    def note(top_left, bottom_right, _roles=()):
        for r in range(top_left.row(), bottom_right.row() + 1):
            for c in range(top_left.column(), bottom_right.column() + 1):
                cells.add((r, c))

    model.dataChanged.connect(note)
    if show is None:
        model.show(TableBuilder().build(frame, None, TableOrder()))
    else:
        show(frame)
    model.dataChanged.disconnect(note)
    return cells


def test_a_second_that_only_ages_a_process_repaints_its_age_cell(qtbot):
    model = ProcessTableModel(ColourBook())
    model.show(TableBuilder().build(frame_at(22), None, TableOrder()))
    job = next(i for i, r in enumerate(model.rows) if r.pid == 5555)  # started at frame 20
    cells = _signalled(model, frame_at(23))
    assert cells == {(job, COL["Age"])}
    assert model.data(model.index(job, COL["Age"])) == "3 s"
    assert _signalled(model, frame_at(23)) == set()  # nothing changed, nothing repainted


def test_a_process_that_grows_repaints_its_memory_cell_and_nothing_else_of_its_row(qtbot):
    model = ProcessTableModel(ColourBook())
    model.show(TableBuilder().build(frame_at(59), None, TableOrder()))
    train = next(i for i, r in enumerate(model.rows) if r.pid == 4242)
    cells = _signalled(model, frame_at(60))  # train.py: 14 -> 18 GiB, still the largest
    assert (train, COL["Memory"]) in cells
    assert {c for r, c in cells if r == train} == {COL["Memory"], COL["Age"]}
    assert {c for r, c in cells if r != train} <= {COL["Age"]}
    assert model.data(model.index(train, COL["Memory"])) == "18.00 GiB"


def _young(k: int, n: int = 300) -> Frame:
    """``n`` processes started at T0 on one GPU, seen ``k`` seconds later (ages in seconds)."""
    procs = tuple(
        GpuProcess(
            pid=20_000 + p,
            used=(n - p) * MiB,
            sm=0,
            info=ProcessInfo(
                pid=20_000 + p, start_time=T0, user="u", name="python", cmdline=("python", f"w{p}.py")
            ),
        )
        for p in range(n)
    )
    used = sum(p.used for p in procs)
    return Frame(
        time=T0 + k,
        source="test",
        gpus=(
            GpuSample(
                index=0,
                name="NVIDIA H100",
                uuid="GPU-0",
                total=80 * GiB,
                used=used,
                free=80 * GiB - used,
                processes=procs,
            ),
        ),
    )


def _shown_table(qtbot, height: int) -> ProcessTable:
    table = ProcessTable(ColourBook())
    qtbot.addWidget(table)
    table.resize(1400, height)
    table.show()
    qtbot.waitExposed(table)
    return table


def test_a_long_table_repaints_only_the_rows_in_view_and_reads_the_rest_when_scrolled(qtbot):
    table = _shown_table(qtbot, 400)
    table.show_frame(_young(10))
    cells = _signalled(table.model, _young(11), show=table.show_frame)
    in_view = {table.view.rowAt(y) for y in range(table.view.viewport().height())} - {-1}
    assert 5 < len(in_view) < 300
    assert cells == {(r, COL["Age"]) for r in in_view}  # the 290-odd rows below: no signal
    table.view.scrollToBottom()
    last = table.model.rowCount() - 1
    assert table.model.data(table.model.index(last, COL["Age"])) == "11 s"
    table.hide()  # another tab in front: nothing to repaint
    assert _signalled(table.model, _young(12), show=table.show_frame) == set()
    table.show()
    assert table.model.data(table.model.index(0, COL["Age"])) == "12 s"


def _pair(k: int, swapped: bool) -> Frame:
    """Two jobs of one user on one GPU, started together; ``swapped``: the second is the larger."""
    sizes = (2 * GiB, 3 * GiB) if swapped else (3 * GiB, 2 * GiB)
    procs = tuple(
        GpuProcess(
            pid=30_000 + p,
            used=sizes[p],
            sm=0,
            info=ProcessInfo(
                pid=30_000 + p, start_time=T0, user="u", name="python", cmdline=("python", f"job{p}.py")
            ),
        )
        for p in range(2)
    )
    return Frame(
        time=T0 + k,
        source="test",
        gpus=(GpuSample(index=0, name="H100", uuid="GPU-0", total=80 * GiB, used=5 * GiB, processes=procs),),
    )


def test_two_processes_trading_places_repaint_the_cells_that_moved_and_keep_the_selection(qtbot):
    table = _shown_table(qtbot, 300)
    table.show_table(TableBuilder().build(_pair(10, swapped=False), None, TableOrder()), _pair(10, False))
    second = next(r.key for r in table.model.rows if r.pid == 30_001)
    table.select_key(second)
    assert table.display_row_of(second) == 1
    layouts = []
    table.model.layoutChanged.connect(lambda *_: layouts.append(1))
    table.model.modelReset.connect(lambda *_: layouts.append(1))
    cells = _signalled(
        table.model,
        _pair(10, swapped=True),
        show=lambda f: table.show_table(TableBuilder().build(f, None, TableOrder()), f),
    )
    assert [r.pid for r in table.model.rows] == [30_001, 30_000]  # the larger first
    assert layouts == []  # no layout change: the view repaints the cells below, nothing more
    differ = {COL[n] for n in ("PID", "Name", "Command")}
    # each place still reads 3.00 then 2.00 GiB; same user, SM %, age: not repainted
    assert cells == {(r, c) for r in (0, 1) for c in differ}
    assert table.selected_key == second  # the selection followed its process to the top
    assert [i.row() for i in table.view.selectionModel().selectedRows()] == [0]
    assert table.model.data(table.model.index(0, COL["Memory"])) == "3.00 GiB"
