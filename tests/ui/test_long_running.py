"""What matters after the window has been open all day."""

from __future__ import annotations

import gc
import sys

import pytest

from vramscope.core.store.store import gpu_key
from vramscope.core.units import GiB

from .frames import eight_gpus_frame, frame_at
from .helpers import drawn_through


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from Python 3.12")
def test_signal_emits_do_not_leak_references_to_true(qapp):
    """PySide6 6.12.0 on Python 3.11 drops a reference to True on every emit()
    from Python; pyqtgraph emits on every setData, so the window aborted
    ("Fatal Python error: bool_dealloc") after a few minutes of updates."""
    from PySide6.QtCore import QObject, Signal

    class Emitter(QObject):
        changed = Signal(object)

    e = Emitter()
    before = sys.getrefcount(True)
    for _ in range(1000):
        e.changed.emit(None)
    assert sys.getrefcount(True) >= before - 10


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from Python 3.12")
def test_hundreds_of_updates_keep_true_alive(make_window):
    w = make_window([frame_at(k) for k in range(10)])
    gc.collect()  # garbage of earlier tests freed now, not counted as a drop below
    before = sys.getrefcount(True)
    for k in range(10, 310):
        w.feed.store.append(frame_at(k))
        w.refresh()
    assert sys.getrefcount(True) >= before - 50


def test_timelines_scrolled_out_of_view_catch_up_when_scrolled_in(make_window, qtbot):
    w = make_window([eight_gpus_frame(k) for k in range(30)])
    last = w.gpu_panel.timelines[7]
    qtbot.waitUntil(lambda: not w.gpu_panel._in_view(w.gpu_panel.grid.rows[7]), timeout=2000)
    for k in range(30, 35):
        w.feed.store.append(eight_gpus_frame(k))
    w.refresh()
    since = w.store.latest.time - 60
    t, v = w.store.series(gpu_key(7, "used"), since)
    x, y = w.gpu_panel.timelines[0].used_curve.getData()
    assert drawn_through(x, y * GiB, *w.store.series(gpu_key(0, "used"), since))  # in view: drawn
    assert last.used_curve.getData()[0][-1] < t[-1]  # out of view: not redrawn yet
    bar = w.gpu_panel.verticalScrollBar()
    bar.setValue(bar.maximum())
    x, y = last.used_curve.getData()
    assert drawn_through(x, y * GiB, t, v)
