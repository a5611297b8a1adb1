"""The Monitor tab's split: the GPU rows above, the process table below.

It gives the table room for its rows (up to TABLE_FIT_ROWS) and the GPUs the
rest, each GPU row keeping its minimum -- until the user drags the grip
(``by_user``; restored layouts count as the user's), from when on it stays.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter

TABLE_FIT_ROWS = 16  # the split gives the table room for this many rows when the GPUs allow


class MonitorSplit(QSplitter):
    def __init__(self, gpu_panel, table, parent=None):
        super().__init__(Qt.Orientation.Vertical, parent)
        self.gpu_panel, self.table = gpu_panel, table
        self.addWidget(gpu_panel)
        self.addWidget(table)
        self.setStretchFactor(0, 3)
        self.setStretchFactor(1, 2)
        self.setChildrenCollapsible(False)
        self.setSizes([640, 190])
        self.splitterMoved.connect(self._moved)
        self.by_user = False  # True once dragged (or restored): fit leaves it alone
        self._fitted_rows = -1
        table.setMinimumHeight(90)
        table.shown.connect(self.fit)  # its rows are known once built

    def _moved(self, *_args) -> None:
        self.by_user = True

    def fit(self, force: bool = False) -> None:
        """Table room for its rows (up to TABLE_FIT_ROWS), the GPUs the rest."""
        rows = self.table.model.rowCount()
        if self.by_user or (rows == self._fitted_rows and not force):
            return
        self._fitted_rows = rows
        total = sum(self.sizes())
        if total <= 0:
            return
        gpus_min = self.gpu_panel.minimum_rows_height()
        want = self.table.height_for_rows(min(rows, TABLE_FIT_ROWS))
        table = max(self.table.minimumHeight(), min(want, total - gpus_min))
        self.setSizes([total - table, table])

    def refit(self) -> None:
        """The window was resized: fit again (unless the user moved the split)."""
        self._fitted_rows = -1
        self.fit()
