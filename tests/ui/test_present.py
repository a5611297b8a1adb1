"""The app shows its window with what lives as long as the window frozen
(gc.freeze): the collector's full collections skip it, and nothing else about
the collector changes (ui/app.py present)."""

from __future__ import annotations

import gc
import weakref

from PySide6.QtWidgets import QWidget

from vramscope.ui.app import present


class _Cycle:
    pass


def test_the_window_is_shown_with_its_start_up_objects_frozen_and_the_collector_unchanged(themed_app, qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    thresholds = gc.get_threshold()
    try:
        present(window)
        assert window.isVisible()
        assert gc.get_freeze_count() > 10_000  # the modules, classes and widgets loaded so far
        assert gc.isenabled() and gc.get_threshold() == thresholds
        later = _Cycle()
        later.me = later  # garbage in a cycle, made after the window was shown: still freed
        gone = weakref.ref(later)
        del later
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()  # (a test process must free each test's window)
