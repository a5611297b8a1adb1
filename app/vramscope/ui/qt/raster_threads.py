"""Qt's raster engine fills on the thread that paints, not through its pool.

Qt 6's raster paint engine hands every fill of 96 spans or more (a timeline's
stacked band, a long line, a widget's background) to its GUI thread pool in
slices and waits for them (qtbase src/gui/painting/qdrawhelper.cpp,
``QT_THREAD_PARALLEL_FILLS``). At the window's sizes the hand-off -- waking
the pool's threads, then waiting for the last -- costs more than the fill: a
1,400 x 400 band filled on an offscreen image took 1.3-1.7 ms of CPU (and as
much wall time) through the pool against 0.5 ms on the painting thread (2-core
VM, bench/README.md), and the pool's threads woke ~40 times a second with the
window at rest. Qt leaves the pool out when ``QT_NO_GUI_THREADPOOL`` is set
when it is first asked for it (qtbase src/corelib/thread/qthreadpool.cpp and
src/gui/kernel/qguiapplication.cpp, ``QGuiApplicationPrivate::qtGuiThreadPool``):
set before the application exists, every fill runs where it is painted. The
pixels are the same either way. A value the user set is kept (Qt reads only
whether the variable is set, so any value turns the pool off).
"""

from __future__ import annotations

import os

VARIABLE = "QT_NO_GUI_THREADPOOL"


def fill_on_the_painting_thread(environ=os.environ) -> None:
    """Before the QApplication is made: Qt's raster fills stay on the painting thread."""
    environ.setdefault(VARIABLE, "1")
