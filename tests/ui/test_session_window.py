"""Reopening a recorded session: the same panels, a scrubber over its length."""

from __future__ import annotations

import numpy as np
import pytest

from vramscope.cli import main
from vramscope.core.store.store import gpu_key
from vramscope.core.units import GiB
from vramscope.ui.window.session_files import open_session_window

from tests.core.session.helpers import T0, record
from .helpers import drawn_through, save, table_column


@pytest.fixture
def session_window(themed_app, qtbot, tmp_path):
    path = tmp_path / "run.vramscope"
    live = record(path, n=40)
    feed, window = open_session_window(str(path))
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    qtbot.wait(10)
    yield live, window
    feed.close()


def test_reopened_session_shows_what_was_recorded(session_window, artifacts_dir):
    live, window = session_window
    assert [c.name_text for c in window.gpu_panel.cards.values()] == ["Test GPU A", "Test GPU B"]
    t, v = window.store.series(gpu_key(0, "used"))
    lt, lv = live.series(gpu_key(0, "used"))
    assert np.array_equal(t, lt) and np.array_equal(v, lv)
    curve_t, curve_v = window.gpu_panel.timelines[0].used_curve.getData()
    assert drawn_through(curve_t, curve_v * GiB, lt, lv)
    assert window.window_key == "all"
    save(window, artifacts_dir, "session-reopened.png")


def test_scrubbing_shows_that_moment_in_the_table(session_window):
    _live, window = session_window
    window.scrubber.set_time(T0 + 10)  # the first job (pid 5555) still runs
    assert "5555" in table_column(window, "PID")
    window.scrubber.set_time(T0 + 22)  # it exited at pass 20; its successor starts at 25
    assert "5555" not in table_column(window, "PID")
    assert "4242" in table_column(window, "PID")


def test_a_file_that_is_not_a_session_is_refused_clearly(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("not a database")
    assert main([str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_a_sixteen_gpu_session_puts_the_cursor_on_rows_made_as_they_scroll_in(themed_app, qtbot, tmp_path):
    from dataclasses import replace

    import pyqtgraph as pg

    from tests.core.session.helpers import frame
    from vramscope.core.session import SessionWriter
    from vramscope.core.store.store import Store

    path = tmp_path / "big.vramscope"
    writer = SessionWriter(path, meta={"source": "test", "simulated": True})
    store = Store()
    store.listeners.subscribe(writer)
    for k in range(20):
        f = frame(k)
        store.append(replace(f, gpus=tuple(replace(f.gpus[0], index=g, uuid=f"GPU-{g}") for g in range(16))))
    writer.close()
    feed, window = open_session_window(str(path))
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    panel = window.gpu_panel
    qtbot.waitUntil(lambda: 0 in panel.timelines, timeout=5000)
    window.scrubber.set_time(T0 + 10)
    assert 15 not in panel.timelines  # not in view: not made yet
    panel.ensureWidgetVisible(panel.grid.rows[15])
    qtbot.waitUntil(lambda: 15 in panel.timelines, timeout=5000)

    def cursors(index):
        return [
            i.value()
            for i in panel.timelines[index].plot.items
            if isinstance(i, pg.InfiniteLine) and abs(i.value() - (T0 + 10)) < 1
        ]

    assert len(cursors(0)) == 1 and cursors(15) == cursors(0)  # at the moment shown
    feed.close()


def test_the_session_window_has_help_and_all_spans_the_session(session_window):
    _live, window = session_window
    menus = [a.text() for a in window.menuBar().actions()]
    assert "&Help" in menus
    window.set_window("all")
    window.refresh(force=True)
    t0, t1 = window.gpu_panel.timelines[0].plot.viewRange()[0]
    first, last = window.store.first_time, window.store.latest.time
    assert t0 == pytest.approx(first, abs=1.0) and t1 == pytest.approx(last, abs=1.0)


@pytest.mark.timeout(120)
def test_a_session_with_a_10_mb_command_line_opens_with_the_command_cut(themed_app, qtbot, tmp_path):
    """A session of an earlier version, which kept whole command lines."""
    import sqlite3

    path = tmp_path / "old.vramscope"
    record(path, n=40)
    huge = "python3 train.py " + "--flag value " * 800_000  # 10.4 MB
    with sqlite3.connect(path) as db:
        db.execute("UPDATE processes SET command = ? WHERE pid = 4242", (huge,))
    feed, window = open_session_window(str(path))
    qtbot.addWidget(window)
    window.show()
    qtbot.wait(10)
    try:
        cell = table_column(window, "Command")
        trainer = next(text for text in cell if text.startswith("python3 train.py --flag value"))
        assert trainer.endswith("more characters not kept]") and len(trainer) < 70_000
    finally:
        feed.close()
