"""A session with a damaged row opens in the window: the rest of it is shown."""

from __future__ import annotations

import sqlite3

from vramscope.cli import main
from vramscope.ui.window.session_files import open_session_window

from tests.core.session.helpers import T0, record
from .helpers import table_column


def test_one_bad_row_does_not_refuse_the_file(themed_app, qtbot, tmp_path):
    path = tmp_path / "run.vramscope"
    record(path, n=40)
    db = sqlite3.connect(path)
    db.execute("UPDATE gpu_samples SET used = 'lots' WHERE t = ?", (T0 + 39,))
    db.execute("UPDATE proc_samples SET ids = x'01' WHERE t = ? AND gpu = 1", (T0 + 39,))
    db.commit()
    db.close()
    feed, window = open_session_window(str(path))
    qtbot.addWidget(window)
    try:
        window.show()
        window.refresh(force=True)
        assert "4242" in table_column(window, "PID")  # the newest pass, with what it holds
        assert window.gpu_panel.cards[0].used.text().startswith("n/a")  # the unreadable value
        assert window.reader.damaged
    finally:
        feed.close()


def test_export_of_a_damaged_file_says_so_in_lines_not_a_traceback(tmp_path, capsys):
    path = tmp_path / "run.vramscope"
    record(path, n=20)
    db = sqlite3.connect(path)
    db.execute("UPDATE processes SET pid = 'abc'")
    db.commit()
    db.close()
    assert main(["export", str(path), "--format", "csv", "--out", str(tmp_path / "o.csv")]) == 0
    err = capsys.readouterr().err
    assert "damaged" in err and "Traceback" not in err
