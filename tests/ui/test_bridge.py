"""Worker threads hand work to the Qt main thread only through the bridge."""

from __future__ import annotations

import threading

from vramscope.ui.qt.bridge import Bridge


def test_post_from_a_worker_runs_on_the_main_thread(qapp, qtbot):
    bridge = Bridge()
    ran_on = []
    worker = threading.Thread(
        target=lambda: bridge.post(lambda x: ran_on.append((threading.current_thread(), x)), 42)
    )
    worker.start()
    worker.join()
    assert ran_on == []  # queued: nothing runs on the worker
    qtbot.waitUntil(lambda: len(ran_on) == 1, timeout=2000)
    assert ran_on == [(threading.main_thread(), 42)]


def test_run_in_thread_hands_result_and_error_back(qapp, qtbot):
    bridge = Bridge()
    done = []
    bridge.run_in_thread(
        lambda: threading.current_thread().name,
        lambda r, e: done.append((r, e, threading.current_thread())),
        name="w1",
    )
    bridge.run_in_thread(lambda: 1 / 0, lambda r, e: done.append((r, type(e), None)))
    qtbot.waitUntil(lambda: len(done) == 2, timeout=2000)
    assert ("w1", None, threading.main_thread()) in done
    assert (None, ZeroDivisionError, None) in done


def test_a_worker_finishing_after_the_window_closed_drops_its_result_quietly(qapp, qtbot):
    """Closing the window while a busy table is built: no traceback from the worker."""
    import shiboken6

    bridge = Bridge()
    shiboken6.delete(bridge)  # the window and its bridge are gone
    errors = []
    worker = threading.Thread(target=lambda: _post(bridge, errors))
    worker.start()
    worker.join()
    assert errors == []


def _post(bridge, errors):
    try:
        bridge.post(print, "never shown")
    except Exception as exc:  # what used to end the worker thread with a traceback
        errors.append(exc)
