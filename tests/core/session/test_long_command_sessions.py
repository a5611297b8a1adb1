"""A session written by an earlier version, which kept whole command lines: a 10 MB
one is cut where the session is read, so the window opening it does not hang, and
what is cut is said."""

from __future__ import annotations

import sqlite3

import pytest

from tests.core.session.helpers import record
from vramscope.core.processes.process_text import MAX_COMMAND_TEXT
from vramscope.core.session import load_into_store, open_session

HUGE = "python3 train.py " + "--flag value " * 800_000  # 10.4 MB, 1.6 million arguments


@pytest.fixture
def old_session(tmp_path):
    path = tmp_path / "old.vramscope"
    record(path, n=40)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE processes SET command = ? WHERE pid = 4242", (HUGE,))
    return path


def test_a_10_mb_command_line_is_cut_where_the_session_is_read(old_session):
    with open_session(old_session) as r:
        [rec] = [p for p in r.processes().values() if p.pid == 4242]
        assert rec.command.startswith("python3 train.py --flag value")
        assert len(rec.command) < MAX_COMMAND_TEXT + 100
        assert rec.command.endswith(f"[... {len(HUGE) - MAX_COMMAND_TEXT:,} more characters not kept]")
        store = load_into_store(r)
    [trainer] = [p for p in store.latest.all_processes() if p[1].pid == 4242]
    assert trainer[1].info.cmdline[:2] == ("python3", "train.py")
    assert len(" ".join(trainer[1].info.cmdline)) < MAX_COMMAND_TEXT + 100
    others = [p.command for p in open_session(old_session).processes().values() if p.pid != 4242]
    assert "python3 train.py --lr 3e-4" in others  # the others as they were
