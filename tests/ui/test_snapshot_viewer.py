"""The snapshot viewer, as a user meets it: `vramscope FILE.pickle` (a process of its
own), the window's timeline, cursor, what was alive, segment map, OOMs, comparison and
a load that can be cancelled. Figures are checked against the independent replay of
tests/core/snapshot/snapshot_format.py."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pyqtgraph as pg
import pytest

from tests.core.snapshot.snapshot_format import replay
from vramscope.core.snapshot.example import training_snapshot
from vramscope.ui.snapshot.window import SnapshotWindow

from .helpers import save


def _file(tmp_path, snap, name="train.pickle"):
    path = tmp_path / name
    path.write_bytes(pickle.dumps(snap, protocol=4))
    return str(path)


def _opened(qtbot, path, size=(1400, 900)):
    window = SnapshotWindow()
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    errors = []
    window.open_path(path, errors.append)
    qtbot.waitUntil(lambda: bool(window.tl is not None or errors or window.error), timeout=30_000)
    return window, errors


def _tree_rows(window) -> list[tuple[str, str, str]]:
    tree = window.alive
    return [tuple(tree.topLevelItem(i).text(c) for c in range(3)) for i in range(tree.topLevelItemCount())]


def test_the_cursor_starts_at_the_peak_showing_what_was_alive_by_stack(qtbot, tmp_path, artifacts_dir):
    snap = training_snapshot()
    window, errors = _opened(qtbot, _file(tmp_path, snap))
    assert not errors
    qtbot.waitUntil(lambda: window.alive.topLevelItemCount() > 0)
    peak, _time, at_peak, _ = replay(snap, 0)
    from vramscope.core.units import fmt_bytes

    expected = sorted(at_peak.items(), key=lambda kv: -kv[1][0])
    rows = _tree_rows(window)
    assert [(r[0], int(r[1])) for r in rows] == [(fmt_bytes(b), c) for _k, (b, c) in expected]
    inner = {k: next(f"{f}:{ln} in {n}" for f, ln, n in k if "/torch/" not in f) for k, _ in expected}
    assert [r[2] for r in rows] == [inner[k] for k, _ in expected]
    assert fmt_bytes(peak) in window.cursor_text.text() and "OOM" in window.figures.text()
    first = window.alive.topLevelItem(0)
    assert first.isExpanded() and first.childCount() == len(expected[0][0])  # the whole stack
    qtbot.waitUntil(window.segment_map.isVisible)  # once the cursor rests
    (segment,) = window.segment_map.bars.segments  # the example's one segment, at the peak's instant
    assert sum(n for state, n in segment["runs"] if state != "free_split") >= peak
    ooms = [
        i
        for i in window.plot.getPlotItem().items
        if isinstance(i, pg.InfiniteLine) and i is not window.plot.cursor
    ]
    assert len(ooms) == 1 and ooms[0].value() == pytest.approx(float(window.tl.x[-1]))
    save(window, artifacts_dir, "snapshot-viewer.png")


def test_moving_the_cursor_shows_that_instant(qtbot, tmp_path):
    snap = training_snapshot()
    window, _ = _opened(qtbot, _file(tmp_path, snap))
    for point in (0, 40, 41, len(window.tl.x) // 2):
        before = window.cursor_text.text()
        window.plot.set_cursor(float(window.tl.x[point]))
        qtbot.waitUntil(lambda: window.cursor_text.text() != before)  # noqa: B023 (waited on at once)
        entry = int(window.tl.entries[point]) if point else 0  # x = 0 is the first entry's instant
        stamp = snap["device_traces"][0][entry]["time_us"]
        _p, _t, _g, at = replay(snap, 0, at_time=stamp)
        expected = sorted(at.values(), key=lambda v: -v[0])
        from vramscope.core.units import fmt_bytes

        assert [(r[0], int(r[1])) for r in _tree_rows(window)] == [(fmt_bytes(b), c) for b, c in expected]
        assert f"entry {entry})" in window.cursor_text.text()


def test_two_snapshots_compared(qtbot, tmp_path):
    window, _ = _opened(qtbot, _file(tmp_path, training_snapshot(steps=5, oom=True)))
    window.compare_path(_file(tmp_path, training_snapshot(steps=2, oom=False), "short.pickle"))
    qtbot.waitUntil(lambda: window.comparison.isVisible(), timeout=30_000)
    text = window.comparison.toPlainText()
    assert "difference (second - first)" in text and "short.pickle" in text
    assert "the compared snapshot's total" in window.legend.text()


def test_a_file_that_is_not_a_snapshot_is_said_and_nothing_runs(qtbot, tmp_path):
    marker = tmp_path / "ran"

    class RunsCode:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    window, errors = _opened(qtbot, _file(tmp_path, {"segments": [RunsCode()]}, "evil.pickle"))
    assert not marker.exists() and window.tl is None
    assert len(errors) == 1 and "names a Python global" in errors[0] and "\n" not in errors[0]
    assert errors[0] in window.figures.text()


def test_loading_can_be_cancelled(qtbot, tmp_path):
    trace = [
        {"action": "alloc", "addr": 4096 * i, "size": 512, "stream": 0, "time_us": i, "frames": []}
        for i in range(400_000)
    ]
    path = _file(tmp_path, {"segments": [], "device_traces": [trace]}, "big.pickle")
    window = SnapshotWindow()
    qtbot.addWidget(window)
    errors = []
    window.open_path(path, errors.append)
    from PySide6.QtWidgets import QPushButton

    window.progress.findChild(QPushButton).click()  # the dialog's Cancel
    qtbot.waitUntil(lambda: not window.progress.isVisible(), timeout=30_000)
    qtbot.wait(1500)  # whatever the worker was reading has ended by now
    assert window.tl is None and window.snap is None and not errors and window.error is None


OPEN_MANY = """
import faulthandler, os, sys
faulthandler.dump_traceback_later(90, exit=True)  # a deadlock: its stacks, and out
from PySide6.QtWidgets import QApplication, QWidget
from vramscope.ui.qt.bridge import Bridge
from vramscope.ui.snapshot.loading import load_in_background
app = QApplication([])
parent = QWidget()
parent.show()
bridge = Bridge(parent)
for _ in range(int(sys.argv[2])):
    box = []
    dialog = load_in_background(parent, sys.argv[1], lambda snap, error: box.append(error), bridge)
    while not box:
        app.processEvents()
    assert box == [None], box
    dialog.close()
print("opened", sys.argv[2])
"""


@pytest.mark.slow
def test_a_snapshot_opened_again_and_again_never_locks_the_window(tmp_path):
    """The reading thread ends while the window closes its progress dialog: nothing the
    thread lets go of may take Qt's connection lock the GUI thread waits on (it did: the
    cancel button's connection, dropped by the thread, hung the window within a few hundred openings)."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    path = _file(tmp_path, training_snapshot())
    r = subprocess.run(
        [sys.executable, "-c", OPEN_MANY, path, "600"], capture_output=True, text=True, timeout=150, env=env
    )
    assert r.returncode == 0 and "opened 600" in r.stdout, r.stderr[-3000:]


def _vramscope(*args, env=None):
    script = os.path.join(os.path.dirname(sys.executable), "vramscope")
    cmd = [script] if os.path.exists(script) else [sys.executable, "-m", "vramscope"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.slow
def test_vramscope_file_pickle_opens_the_viewer_as_a_process(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    r = _vramscope(_file(tmp_path, training_snapshot()), "--quit-after", "4", env=env)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(pickle.dumps(["not", "a", "snapshot"], protocol=4))
    r = _vramscope(str(bad), "--quit-after", "3", env=env)
    assert "Traceback" not in r.stderr, r.stderr
    assert [line for line in r.stderr.splitlines() if line.startswith("vramscope:")] == [
        f"vramscope: {bad}: not a PyTorch memory snapshot: the pickle holds a list, not a dict"
    ]


def test_file_open_snapshot_in_the_monitor_window(themed_app, qtbot, tmp_path, monkeypatch):
    import argparse

    from PySide6.QtWidgets import QFileDialog

    from vramscope.sources.demo.simulated import SimulatedSource
    from vramscope.ui.window.app import build_window

    args = argparse.Namespace(
        demo=True, interval=1.0, window="10m", record=False, read_only=False, prometheus=None, file=None
    )
    feed, window = build_window(
        args, source=SimulatedSource(seed=1, start_time=1.8e9), start=False, poll_ms=60_000
    )
    qtbot.addWidget(window)
    path = _file(tmp_path, training_snapshot())
    # the file dialog answers as a user picking the file would
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (path, "")))
    (action,) = [a for a in window.file_menu.actions() if a.text() == "Open &snapshot…"]
    action.trigger()
    (viewer,) = window.snapshot_windows
    qtbot.waitUntil(lambda: viewer.tl is not None, timeout=30_000)
    assert viewer.path == path and viewer.isVisible() and viewer.isWindow()
    window.services.close()


def test_a_missing_snapshot_file_is_said_in_one_line(tmp_path):
    r = _vramscope(str(tmp_path / "gone.pickle"), env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    assert r.returncode == 2 and r.stderr == f"vramscope: {tmp_path / 'gone.pickle'}: no such snapshot file\n"
