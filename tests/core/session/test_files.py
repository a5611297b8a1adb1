"""Session files are the user's only; the default directory stays under its cap."""

from __future__ import annotations

import os
import stat
import time

from vramscope.core.session import (
    RetentionPolicy,
    SessionWriter,
    enforce_retention,
    list_sessions,
    new_session_path,
)
from vramscope.core.session.library import default_directory

from tests.core.session.helpers import frame


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_files_are_0600_while_written_and_after(tmp_path):
    old = os.umask(0o022)  # a permissive umask must not leak into the session
    try:
        path = tmp_path / "s.vramscope"
        w = SessionWriter(path)
        w.on_frame(frame(0))
        w.flush()
        for p in (path, tmp_path / "s.vramscope-wal", tmp_path / "s.vramscope-shm"):
            assert p.exists() and _mode(p) == 0o600, p
        w.close()
        assert _mode(path) == 0o600
    finally:
        os.umask(old)


def test_default_directory_is_private_and_per_user(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    directory = default_directory()
    assert str(directory).startswith(str(tmp_path / "data"))
    path = new_session_path()
    assert path.parent == directory and _mode(directory) == 0o700
    assert path.name.endswith(".vramscope")


def test_retention_removes_oldest_past_the_cap_never_the_current(tmp_path):
    now = time.time()
    paths = []
    for i in range(5):
        p = tmp_path / f"s{i}.vramscope"
        p.write_bytes(b"x" * 1000)
        (tmp_path / f"s{i}.vramscope-wal").write_bytes(b"w" * 10)
        os.utime(p, (now - (5 - i) * 100, now - (5 - i) * 100))
        paths.append(p)
    # the current recording is the oldest file here: still kept
    removed = enforce_retention(
        RetentionPolicy(max_bytes=2100, max_age_days=None), tmp_path, keep=paths[0], now=now
    )
    assert removed == paths[1:4]
    assert list_sessions(tmp_path) == [paths[0], paths[4]]
    assert not (tmp_path / "s1.vramscope-wal").exists()


def test_retention_by_age(tmp_path):
    now = time.time()
    old, new = tmp_path / "old.vramscope", tmp_path / "new.vramscope"
    for p, age_days in ((old, 40), (new, 1)):
        p.write_bytes(b"x")
        os.utime(p, (now - age_days * 86400, now - age_days * 86400))
    removed = enforce_retention(RetentionPolicy(max_bytes=None, max_age_days=30), tmp_path, now=now)
    assert removed == [old] and new.exists()
