"""The process table is built off the GUI thread: the rows of a frame (sorted,
grouped, filtered: core/processes/process_rows.py ``TableBuilder``) are made on
a worker, whatever the machine, and shown when ready; a newer frame replaces one
still waiting (ui/qt/bridge.py ``LatestOnly``).

A busy frame's table (BUSY_PROCESSES or more) is built AFTER_PLOTS_MS after the
frame came, once its plots are drawn (one timeline per event-loop turn, then
painted: ~50-100 ms at 16 GPUs x 1,024 processes). The build is ~100 ms of
Python on the worker, and while it runs every step of the GUI thread that needs
the GIL waits for the worker's turn to end (up to sys.getswitchinterval(), 5 ms):
plots drawn beside it took 50-170 ms instead of 30 (bench/window_scale.py).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QTimer

from vramscope.core.processes.process_rows import TableBuilder, TableOrder, TableRows
from vramscope.ui.qt.bridge import BUSY_PROCESSES, Bridge, LatestOnly

AFTER_PLOTS_MS = 150


class TableWorker:
    """``builder`` builds the rows in the table's order when a build starts (``order()``);
    ``shown(table, frame)`` gets each build on the GUI thread. ``owner``: the QObject
    the bridge and timer live on."""

    def __init__(
        self,
        owner,
        builder: TableBuilder,
        order: Callable[[], TableOrder],
        shown: Callable[[TableRows, object], None],
    ):
        self.builder = builder
        self._order, self._shown = order, shown
        self._bridge = Bridge(owner)
        self.worker = LatestOnly(self._bridge, "vramscope-table")
        self._due: tuple | None = None  # (frame, store) of a busy frame waiting for its plots
        self._after_plots = QTimer(owner)
        self._after_plots.setSingleShot(True)
        self._after_plots.setInterval(AFTER_PLOTS_MS)
        self._after_plots.timeout.connect(self._build_due)

    def submit(self, frame, store=None) -> None:
        """Build ``frame``'s table (now, or a busy frame's once its plots are drawn)."""
        if frame is not None and sum(len(g.processes) for g in frame.gpus) >= BUSY_PROCESSES:
            self._due = (frame, store)
            if not self._after_plots.isActive():  # (not restarted: fast sampling still shows tables)
                self._after_plots.start()
            return
        self._due = None
        self._after_plots.stop()
        self._build(frame, store)

    def _build_due(self) -> None:
        if self._due is not None:
            due, self._due = self._due, None
            self._build(*due)

    def _build(self, frame, store) -> None:
        order = self._order()
        self.worker.submit(
            lambda: (self.builder.build(frame, store, order), frame), lambda built: self._shown(*built)
        )

    def settle(self, timeout: float = 10.0) -> None:
        """Until the table asked for is built and shown (tests, benches; never the app)."""
        from PySide6.QtCore import QCoreApplication, QEvent

        self._after_plots.stop()
        self._build_due()
        self.worker.wait_idle(timeout)
        QCoreApplication.sendPostedEvents(self._bridge, QEvent.Type.MetaCall)  # its show_table
