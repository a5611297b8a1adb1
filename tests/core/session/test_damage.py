"""A damaged or foreign file: a clear error, and whatever can be read still opens."""

from __future__ import annotations

import os
import sqlite3

import pytest

from vramscope.core.export import export_csv
from vramscope.core.session import (
    NotASessionError,
    SessionCorruptError,
    SessionError,
    SessionVersionError,
    load_into_store,
    open_session,
)

from tests.core.session.helpers import T0, record


@pytest.fixture
def long_session(tmp_path):
    path = tmp_path / "long.vramscope"
    record(path, n=1200)
    return path


def test_truncated_file_strict_error_names_the_truncation(long_session):
    size = os.path.getsize(long_session)
    with open(long_session, "r+b") as f:
        f.truncate(size * 6 // 10)
    with pytest.raises(SessionCorruptError, match="truncated"):
        open_session(long_session, strict=True)


def test_truncated_file_opens_what_it_can(long_session, tmp_path):
    size = os.path.getsize(long_session)
    with open(long_session, "r+b") as f:
        f.truncate(size * 6 // 10)
    with open_session(long_session) as r:
        assert r.damaged and any("truncated" in p for p in r.problems)
        span = r.span()
        assert span is not None and span[0] == T0  # the start of the recording survived
        store = load_into_store(r)
        assert store.latest is not None
        summary = export_csv(r, tmp_path / "partial.csv")
        assert summary.rows > 1000 and summary.problems


def test_overwritten_pages_skip_only_the_damaged_span(long_session, tmp_path):
    size = os.path.getsize(long_session)
    with open(long_session, "r+b") as f:  # garbage over a stretch in the middle
        f.seek(size // 2)
        f.write(os.urandom(16 * 4096))
    with pytest.raises(SessionCorruptError):
        with open_session(long_session, strict=True) as r:
            r.samples.proc_columns()
            r.samples.gpu_columns()
            r.frame_times()
    with open_session(long_session) as r:
        procs = r.samples.proc_columns()
        gpus = r.samples.gpu_columns()
        assert len(gpus) > 0 or len(procs) > 0
        if r.problems:
            assert any("could not be read" in p for p in r.problems)


def test_not_sqlite(tmp_path):
    bad = tmp_path / "notes.vramscope"
    bad.write_text("hello, not a database\n")
    with pytest.raises(NotASessionError, match="not an SQLite database"):
        open_session(bad)
    empty = tmp_path / "empty.vramscope"
    empty.write_bytes(b"")
    with pytest.raises(NotASessionError, match="empty"):
        open_session(empty)


def test_other_sqlite_database(tmp_path):
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(NotASessionError, match="not a vramscope session"):
        open_session(other)


def test_newer_format_is_refused_with_advice(tmp_path):
    path = tmp_path / "new.vramscope"
    record(path, n=3)
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    db.close()
    with pytest.raises(SessionVersionError, match="update vramscope"):
        open_session(path)


def test_missing_file(tmp_path):
    with pytest.raises(SessionError, match="no such session file"):
        open_session(tmp_path / "nope.vramscope")


def test_export_command_reports_damage(long_session, tmp_path, capsys):
    from vramscope.cli import main

    with open(long_session, "r+b") as f:
        f.truncate(os.path.getsize(long_session) // 2)
    rc = main(["export", str(long_session), "--format", "perfetto", "--out", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert rc == 0 and "damaged" in err and "truncated" in err
    assert (tmp_path / "t.json").stat().st_size > 0
    rc = main(["export", str(tmp_path / "t.json"), "--out", str(tmp_path / "x.csv")])
    assert rc == 2 and "not a vramscope session" in capsys.readouterr().err
