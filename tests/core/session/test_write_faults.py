"""The recorder when the disk or the directory says no: nothing raised, nothing
half-written, and the count says what is really in the file."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from vramscope.core.export import FORMATS
from vramscope.core.session import SessionError, SessionWriter, open_session

from .helpers import frame


class FullDisk:
    """The writer's connection on a disk that fills up: small inserts still land
    in the open transaction (new process rows get ids), then the bulk insert or
    the COMMIT fails with SQLite's own 'database or disk is full' -- what a
    4 MiB tmpfs does."""

    def __init__(self, db):
        self.db = db
        self.full = False

    def execute(self, sql, *args):
        if self.full and sql.strip().upper().startswith(("COMMIT", "PRAGMA WAL_CHECKPOINT")):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def executemany(self, sql, rows):
        if self.full:
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.executemany(sql, rows)

    def __getattr__(self, name):
        return getattr(self.db, name)


def _fill_the_disk(writer):
    if not isinstance(writer._db, FullDisk):
        writer._db = FullDisk(writer._db)
    writer._db.full = True


def _free_the_disk(writer):
    writer._db.full = False


def test_a_transient_full_disk_loses_only_its_frames_and_the_file_stays_exportable(tmp_path):
    path = tmp_path / "full.vramscope"
    writer = SessionWriter(path, commit_every=0.0)
    for k in range(5):
        writer(frame(k))
    _fill_the_disk(writer)
    for k in range(5, 30):  # new processes (k >= 25 reuses a PID) appear while full
        writer(frame(k))
    assert writer.errors > 0 and "full" in writer.last_error
    _free_the_disk(writer)
    for k in range(30, 40):
        writer(frame(k))
    writer.close()
    reader = open_session(path)
    assert len(reader) == writer.frames_written  # the count is what is in the file
    assert writer.frames_written + writer.errors == 40
    last = reader.frame_at(reader.span()[1])
    pids = sorted(p.pid for g in last.gpus for p in g.processes)
    assert pids == [900, 4242, 5555]  # rows written after the fault name real processes
    for fmt, fn in FORMATS.items():
        fn(reader, tmp_path / f"out.{fmt}")
        assert (tmp_path / f"out.{fmt}").stat().st_size > 0


def test_a_full_disk_at_stop_is_counted_not_raised(tmp_path):
    path = tmp_path / "stop.vramscope"
    writer = SessionWriter(path, commit_every=60.0)
    for k in range(3):
        writer(frame(k))
    _fill_the_disk(writer)
    writer.close()  # no exception
    assert writer.closed and writer.frames_written == 0 and writer.errors == 3
    writer.add_alert(1.0, "leak", "after close: ignored")  # no exception either
    assert len(open_session(path)) == 0


def test_alerts_and_actions_on_a_full_disk_do_not_raise(tmp_path):
    writer = SessionWriter(tmp_path / "a.vramscope", commit_every=60.0)
    writer(frame(0))
    _fill_the_disk(writer)
    writer.add_alert(1.0, "leak", "x" * 100_000, pid=4242, start_time=1.0)
    writer.add_action(2.0, "SIGTERM", pid=1, start_time=1.0, detail={"m": "y" * 100_000})
    assert writer.errors >= 2 and writer.frames_written == 0
    _free_the_disk(writer)
    writer(frame(1))
    writer.close()
    assert writer.frames_written == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_directory_is_one_line_and_leaves_nothing(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(SessionError) as err:
            SessionWriter(locked / "s.vramscope")
        assert "\n" not in str(err.value) and "Permission denied" in str(err.value)
        with pytest.raises(SessionError, match="Permission denied"):
            SessionWriter(locked / "sub" / "s.vramscope")
    finally:
        os.chmod(locked, 0o700)
    assert list(locked.iterdir()) == []


def test_a_name_too_long_for_sqlite_is_refused_before_anything_is_created(tmp_path):
    with pytest.raises(SessionError, match="choose a shorter") as err:
        SessionWriter(tmp_path / ("x" * 300 + ".vramscope"))
    assert "\n" not in str(err.value)
    with pytest.raises(SessionError, match="choose a shorter"):
        SessionWriter(tmp_path / ("y" * 252 + ".db"))  # 255: the file fits, its -wal would not
    assert list(tmp_path.iterdir()) == []
    ok = SessionWriter(tmp_path / ("z" * 244 + ".db"))  # 247 + "-journal" = 255
    ok(frame(0))
    ok.close()
    assert len(open_session(ok.path)) == 1


def test_a_creation_that_fails_half_way_leaves_no_stub(tmp_path, monkeypatch):
    real_connect = sqlite3.connect

    def broken(*a, **kw):
        db = real_connect(*a, **kw)
        db.close()
        return db  # closed: the first statement fails, after the file exists

    monkeypatch.setattr(sqlite3, "connect", broken)
    path = tmp_path / "retry.vramscope"
    with pytest.raises(SessionError):
        SessionWriter(path)
    assert not path.exists()
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    SessionWriter(path).close()  # the retry does not say "already exists"
    assert path.exists()
