"""A snapshot read on a worker thread, with a progress dialog that can cancel it.

The reading itself is core/snapshot/reading.py (nothing in the file runs); this
module only moves it off the GUI thread and reports progress and the outcome
there. A file that is not a snapshot comes back as its one-line reason.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProgressDialog

from vramscope.core.snapshot import reading, safe_load
from vramscope.ui.qt.bridge import Bridge

STEPS = 1000


def load_in_background(parent, path: str, done, bridge: Bridge | None = None) -> QProgressDialog:
    """Read ``path`` on a thread; ``done(snapshot or None, error text or None)`` on the GUI
    thread (both None when cancelled). Returns the progress dialog (shown after 300 ms)."""
    bridge = bridge or Bridge(parent)
    cancel = threading.Event()
    dialog = QProgressDialog(f"Reading {path}…", "Cancel", 0, STEPS, parent)
    dialog.setWindowTitle("Opening a memory snapshot")
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.setMinimumDuration(300)
    dialog.setAutoClose(False)
    dialog.setAutoReset(False)
    # (a lambda, which the connection holds: connected as the bound ``cancel.set``, PySide
    # watches the Event and disconnects when it dies -- in the worker thread, which drops
    # the last reference as it ends, taking Qt's connection lock while the GUI thread,
    # holding the GIL, closes the dialog: a deadlock, seen in CI)
    dialog.canceled.connect(lambda: cancel.set())

    def progress(done_bytes: int, size: int) -> None:
        bridge.post(dialog.setValue, int(STEPS * done_bytes / max(size, 1)))

    def work():
        try:
            return reading.read(path, progress, cancel.is_set), None
        except safe_load.Cancelled:
            return None, None
        except (safe_load.SnapshotError, OSError) as exc:
            return None, str(exc)

    def finished(result, error) -> None:
        dialog.reset()
        dialog.close()
        if error is not None:  # not expected: the work returns its errors
            done(None, f"{path}: {error}")
        else:
            done(*result)

    bridge.run_in_thread(work, finished, name="vramscope-snapshot-read")
    return dialog
