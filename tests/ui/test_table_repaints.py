"""The process table repaints only the cells that read differently: a second
that only ages every process repaints the Age column, not the table (the whole
table repainted every second was the window's largest cost at rest)."""

from __future__ import annotations

from vramscope.core.process_rows import COL, TableBuilder, TableOrder
from vramscope.ui.process_model import ProcessTableModel
from vramscope.ui.theme import ColourBook

from .frames import frame_at


def _signalled(model, frame) -> set[tuple[int, int]]:
    """The (row, column) cells ``model`` says changed when shown ``frame``."""
    cells: set[tuple[int, int]] = set()

    def note(top_left, bottom_right, _roles=()):
        for r in range(top_left.row(), bottom_right.row() + 1):
            for c in range(top_left.column(), bottom_right.column() + 1):
                cells.add((r, c))

    model.dataChanged.connect(note)
    model.show(TableBuilder().build(frame, None, TableOrder()))
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
