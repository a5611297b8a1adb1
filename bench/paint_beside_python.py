"""One repaint of a table beside a thread running Python: a plain window against
vramscope's (ui/qt/gil_held_paint.py), side by side in one run.

A 1400 x 900 window holds a QTableView over a Python model (16,000 x 12; every
visible cell asks ``data()`` for each role, ~2,500 calls a repaint). Each
repaint is asked the way the app asks it (``update()``, then the event loop
paints) and timed, quiet and while another thread runs a Python loop (as the
window's reader and store threads do when a frame comes). In a plain window
each ``data()`` call takes the GIL anew from the event loop and waits for the
other thread's turn; in vramscope's the whole paint runs inside the window's own
Python ``event()`` and holds it.

    QT_QPA_PLATFORM=offscreen python bench/paint_beside_python.py [--repaints 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "app"))

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QMainWindow, QTableView  # noqa: E402

from vramscope.ui.qt.gil_held_paint import GilHeldPaintWindow  # noqa: E402


class Subclassed(QMainWindow):
    """A plain window as apps make them: a Python subclass (no ``event()`` of its own)."""


class Cells(QAbstractTableModel):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def rowCount(self, parent=QModelIndex()):  # noqa: N802 - Qt's name
        return 16_000

    def columnCount(self, parent=QModelIndex()):  # noqa: N802 - Qt's name
        return 12

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        self.calls += 1
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{index.row()}:{index.column()}"
        return None


def _python_loop(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(1000):
            x += i


def repaint_ms(app, window_class, busy: bool, repaints: int) -> tuple[float, int]:
    """(median ms of one repaint, data() calls in it)."""
    model = Cells()
    window = window_class()
    view = QTableView()
    view.setModel(model)
    window.setCentralWidget(view)
    window.resize(1400, 900)
    window.show()
    app.processEvents()
    stop = threading.Event()
    other = threading.Thread(target=_python_loop, args=(stop,), daemon=True) if busy else None
    if other is not None:
        other.start()
    took = []
    for _ in range(repaints):
        model.calls = 0
        t0 = time.perf_counter()
        view.viewport().update()
        app.processEvents()
        took.append((time.perf_counter() - t0) * 1000)
    stop.set()
    if other is not None:
        other.join()
    window.close()
    return statistics.median(took), model.calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repaints", type=int, default=5)
    ap.add_argument("--other-cores", action="store_true", help="a busy process on each other core")
    a = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    hogs = []
    if a.other_cores:  # every other core busy too, as when the sampler process makes a frame
        spin = "while True: pass"
        hogs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range((os.cpu_count() or 2) - 1)]
    try:
        _compare(app, a.repaints)
    finally:
        for hog in hogs:
            hog.kill()
    return 0


def _compare(app, repaints: int) -> None:
    for busy in (False, True):
        plain, calls = repaint_ms(app, Subclassed, busy, repaints)
        held, _ = repaint_ms(app, GilHeldPaintWindow, busy, repaints)
        where = "beside a thread running Python" if busy else "quiet"
        print(
            f"{where}: one repaint ({calls:,} data() calls), median of {repaints}: "
            f"plain window {plain:.1f} ms, vramscope's {held:.1f} ms ({plain / held:.1f}x)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
