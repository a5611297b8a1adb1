"""Worker loops give way to the window's redraws (core/courtesy.py): on a big
box the sampler's and the table's Python loops otherwise hold the GIL the
window's thread needs after every call into Qt."""

from __future__ import annotations

import threading
import time

import pytest

from vramscope.core import courtesy


@pytest.fixture(autouse=True)
def no_window(monkeypatch):
    monkeypatch.setattr(courtesy, "_busy_until", 0.0)
    monkeypatch.setattr(courtesy, "_gui", None)
    slept: list[float] = []
    real = courtesy._sleep
    monkeypatch.setattr(courtesy, "_sleep", lambda s: (slept.append(s), real(s)))
    return slept


def _in_worker(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(5)
    assert not t.is_alive()
    return out[0]


def test_without_a_window_nothing_waits(no_window):
    assert _in_worker(lambda: sum(courteous_items(range(10_000), every=1))) == sum(range(10_000))
    assert no_window == []  # record and status: never a sleep


def courteous_items(items, every):
    return courtesy.courteous(items, every=every)


def test_a_worker_loop_waits_while_the_window_redraws(no_window):
    span = 0.09  # under MAX_WAIT: the worker waits for the whole redraw
    courtesy.gui_busy(span=span)
    start = time.monotonic()
    got = _in_worker(lambda: [(i, time.monotonic()) for i in courteous_items(range(3), every=1)])
    assert [i for i, _t in got] == [0, 1, 2]  # nothing lost or reordered
    assert got[0][1] - start >= 0.9 * span  # the first item waited for the redraw to end
    assert len(no_window) == 1 and no_window[0] <= span  # once, and no longer than the redraw


def test_the_window_thread_itself_never_waits(no_window):
    courtesy.gui_busy(span=10.0)
    assert list(courteous_items(range(100), every=1)) == list(range(100))
    assert no_window == []


def test_a_window_kept_busy_slows_a_worker_but_never_stops_it(no_window):
    courtesy.gui_busy(span=60.0)  # a redraw that never ends
    start = time.monotonic()
    assert _in_worker(lambda: list(courteous_items(range(200), every=1))) == list(range(200))
    assert time.monotonic() - start < 2.0
    assert no_window == [courtesy.MAX_WAIT]  # one wait, then it runs as long as it waited
