"""Small readers of what the window shows."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from vramscope.ui.processes.process_model import COL


def table_column(window, name: str) -> list[str]:
    model = window.table.model
    return [model.index(r, COL[name]).data(Qt.ItemDataRole.DisplayRole) for r in range(model.rowCount())]


def open_every_group(window) -> None:
    """Lists every group's processes under its row, as clicks on their Names would."""
    from dataclasses import replace

    model = window.table.model
    groups = frozenset(row.key for row in model.rows if row.members)
    model.set_order(replace(model.order, opened=model.order.opened | groups))


def table_cell(window, pid: int, name: str) -> str:
    for r, p in enumerate(table_column(window, "PID")):
        if p and int(p) == pid:  # ('' on a group's row)
            return window.table.model.index(r, COL[name]).data()
    raise AssertionError(f"pid {pid} not in the table")


def same_series(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def drawn_through(x: np.ndarray, y: np.ndarray, t: np.ndarray, v: np.ndarray) -> bool:
    """The line drawn through (x, y) is the series (t, v): from its first point to
    its last, every point of the series is on it -- each drawn point is one of the
    series', and each left out sits on a flat run between two drawn ones (a timeline
    draws a flat stretch as its two ends)."""
    if not len(t):
        return not len(x)
    if not len(x) or x[0] != t[0] or x[-1] != t[-1] or not np.isin(x, t).all():
        return False
    before = np.searchsorted(x, t, side="right") - 1  # the drawn point at or before each
    return bool(np.array_equal(y[before], v, equal_nan=True))


def save(window, artifacts_dir, name: str):
    path = artifacts_dir / name
    assert window.grab().save(str(path)), f"could not save {path}"
    return path


def shown_agent_panel(qtbot, store, frame, window: float = 600.0, size=(1400, 700)):
    """An agents tab over ``store``, shown at ``size`` and drawn from ``frame``."""
    from vramscope.ui.agents.agent_panel import AgentPanel

    panel = AgentPanel(store, window=window)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    panel.update_from(frame)
    qtbot.wait(20)
    panel.update_from(frame)  # the plots have their width now
    return panel


@pytest.fixture(autouse=True)
def settled_tables(monkeypatch):
    """The process table is built on a worker thread (ui/processes/process_table.py) and
    shown a moment later; a test reads it once shown, as the user would."""
    from vramscope.ui.processes.process_table import ProcessTable

    show = ProcessTable.show_frame

    def show_and_settle(self, frame, store=None):
        show(self, frame, store)
        self.settle()

    monkeypatch.setattr(ProcessTable, "show_frame", show_and_settle)
