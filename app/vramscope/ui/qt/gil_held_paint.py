"""A top-level window whose paints run holding the GIL from start to end.

Qt paints from its event loop: the top-level widget gets an ``UpdateRequest``
and paints every dirty widget inside it, calling Python on the way -- the
table model's ``data()`` for each cell and role, pyqtgraph's ``paint()`` for each
item. The event loop runs without the GIL (PySide6 releases it in ``exec()``),
so each of those calls takes the GIL anew and gives it back on return. When
another thread of the window is running Python at that moment (the reader
decoding the sampler's next frame, the store appending it, the table's worker),
the GIL goes to that thread at every return, and each following call waits for
its turn (up to ``sys.getswitchinterval()``, 5 ms). One repaint of a table view
(2,520 ``data()`` calls, 8-28 ms alone) took 2.8-3.7 s beside a thread running
Python on the other core; in the window at 16 GPUs x 1,024 processes, a repaint
that met the ~70 ms of Python a new frame brings stalled it for all of that.

Here the top-level's events are handled inside a Python call (``event()``
overridden), so the whole paint runs with the GIL held: the calls into Python
inside it keep it, and another thread gets it only when the interpreter hands it
over on its own schedule (every switch interval), as between any two Python
threads. The same repaint beside the same thread: 0.22-0.31 s (12-13x less;
``bench/paint_beside_python.py``). When every other core is busy too, the other
thread wakes late, the GIL rarely changes hands between calls, and both take
26-49 ms. Nothing of the collector's or the interpreter's settings changes.
"""

from __future__ import annotations

from PySide6.QtWidgets import QMainWindow


class GilHeldPaintWindow(QMainWindow):
    def event(self, event) -> bool:
        # Not a no-op: this frame holds the GIL while Qt handles the event, the
        # UpdateRequest that paints the whole window included (see the module text).
        return super().event(event)
