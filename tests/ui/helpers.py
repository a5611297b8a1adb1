"""Small readers of what the window shows."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from vramscope.ui.process_model import COL


def table_column(window, name: str) -> list[str]:
    model = window.table.model
    return [model.index(r, COL[name]).data(Qt.ItemDataRole.DisplayRole)
            for r in range(model.rowCount())]


def table_cell(window, pid: int, name: str) -> str:
    for r, p in enumerate(table_column(window, "PID")):
        if int(p) == pid:
            return window.table.model.index(r, COL[name]).data()
    raise AssertionError(f"pid {pid} not in the table")


def same_series(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def save(window, artifacts_dir, name: str):
    path = artifacts_dir / name
    assert window.grab().save(str(path)), f"could not save {path}"
    return path
