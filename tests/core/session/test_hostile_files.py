"""Files vramscope writes and reads where someone else can reach: another user's
directory or link where an export goes, a FIFO, socket or device named as a
session, export or config, values in a session of the wrong type. Nothing of
another user's is written, nothing blocks, every refusal is one line.

"Another user" is played by ``nobody`` (setpriv), which needs root; those tests
are skipped with that reason otherwise."""

from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import socket
import sqlite3
import stat
import subprocess
import tempfile
import threading

import pytest

from vramscope.cli import main

from tests.core.session.helpers import T0
from tests.core.session.test_export_cli import _session_with_oom_snapshot

pytestmark = pytest.mark.timeout(60)


def _nobody() -> int | None:
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None


needs_another_user = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or _nobody() is None,
    reason="playing another user (nobody, through setpriv) needs root, setpriv and a nobody account",
)


def as_nobody(script: str) -> None:
    subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c", script], check=True
    )


@pytest.fixture
def shared_dir():
    """A directory everyone may write to, like /tmp (sticky, 1777)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="vs-shared-"))
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def in_time(fn, *args, limit=20.0):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", fn(*args)), daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), "it hung"
    return out["r"]


def snapshot_name() -> str:
    return f"oom-pid4242-t{T0 + 5.5:.0f}.pickle"


# -- export beside another user's things -----------------------------------------------------


@needs_another_user
def test_export_never_writes_through_another_users_snapshot_directory(tmp_path, shared_dir, capsys):
    session, _ = _session_with_oom_snapshot(tmp_path)
    precious = tmp_path / "precious"  # root's file the link points at
    precious.write_text("root's data")
    os.chmod(tmp_path, 0o755)  # nobody may reach it to name it
    out = shared_dir / "trace.json"
    snaps = shared_dir / "trace.json.oom-snapshots"
    as_nobody(
        f"mkdir -m 0777 {snaps} && ln -s {precious} {snaps}/{snapshot_name()} && "
        f"echo theirs > {shared_dir}/victim && ln -s {shared_dir}/victim {snaps}/other"
    )
    assert main(["export", str(session), "--format", "perfetto", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert precious.read_text() == "root's data" and (shared_dir / "victim").read_text() == "theirs\n"
    assert f"belongs to uid {_nobody()}; not used" in err
    assert len([line for line in err.splitlines() if "not used" in line]) == 1
    assert out.stat().st_uid == 0 and stat.S_IMODE(out.stat().st_mode) == 0o600


@needs_another_user
def test_export_never_writes_through_another_users_link_at_the_out_name(tmp_path, shared_dir, capsys):
    session, _ = _session_with_oom_snapshot(tmp_path)
    precious = tmp_path / "precious"
    precious.write_text("root's data")
    os.chmod(tmp_path, 0o755)
    out = shared_dir / "report.csv"
    as_nobody(f"ln -s {precious} {out}")
    assert main(["export", str(session), "--out", str(out), "--force"]) == 2
    err = capsys.readouterr().err
    assert f"symlink of uid {_nobody()}" in err and len(err.strip().splitlines()) == 1
    assert precious.read_text() == "root's data" and out.is_symlink()


def test_a_snapshot_directory_that_is_a_link_is_not_used(tmp_path, capsys):
    session, _ = _session_with_oom_snapshot(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "t.json"
    (tmp_path / "t.json.oom-snapshots").symlink_to(elsewhere)
    assert main(["export", str(session), "--format", "perfetto", "--out", str(out)]) == 0
    assert "is a symlink, not a directory; not used" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_an_export_over_your_own_link_to_a_regular_file_writes_the_file(tmp_path, capsys):
    session, _ = _session_with_oom_snapshot(tmp_path)
    real = tmp_path / "kept" / "report.csv"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "report.csv"
    link.symlink_to(real)
    assert main(["export", str(session), "--out", str(link), "--force"]) == 0
    assert link.is_symlink() and real.read_text().startswith("time,host,gpu,pid,metric,value\n")


# -- FIFOs, sockets and devices as session, export or config ---------------------------------


def _fifo(path):
    os.mkfifo(path)
    return path


def _socket(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.listen(1)
    return s


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_fifo_or_socket_as_the_session_is_refused_in_one_line(tmp_path, capsys, kind):
    path = tmp_path / "s.vramscope"
    held = _fifo(path) if kind == "fifo" else _socket(path)
    code = in_time(main, ["export", str(path), "--out", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert ("a FIFO" if kind == "fifo" else "a socket") in err and "not a session file" in err
    if kind == "socket":
        held.close()


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_fifo_or_socket_as_the_export_target_is_never_replaced(tmp_path, capsys, kind):
    session, _ = _session_with_oom_snapshot(tmp_path)
    target = tmp_path / "out.csv"
    held = _fifo(target) if kind == "fifo" else _socket(target)
    code = in_time(main, ["export", str(session), "--out", str(target), "--force"])
    err = capsys.readouterr().err
    assert code == 2 and "not replaced" in err and len(err.strip().splitlines()) == 1
    mode = os.lstat(target).st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISSOCK(mode)
    if kind == "socket":
        held.close()


def test_a_fifo_as_the_planner_config_is_refused_in_one_line(tmp_path, capsys):
    config = _fifo(tmp_path / "config.json")
    code = in_time(main, ["plan", "--config", str(config), "--gpu-memory", "24GiB"])
    err = capsys.readouterr().err
    assert code == 2 and "a FIFO, not a regular file" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("where", ["a regular file", "/dev/null"])
def test_record_under_something_that_is_not_a_directory_says_so(tmp_path, capsys, where):
    parent = tmp_path / "notes.txt" if where == "a regular file" else pathlib.Path("/dev/null")
    if where == "a regular file":
        parent.write_text("mine")
    assert main(["record", "--demo", "--duration", "1", "--out", str(parent / "x.vramscope")]) == 2
    err = capsys.readouterr().err
    kind = "a regular file" if where == "a regular file" else "a character device"
    assert f"{parent} is {kind}, not a directory" in err and "already exists" not in err


# -- values of the wrong type inside a session ---------------------------------------------


def test_a_non_numeric_schema_version_is_damage_not_a_traceback(tmp_path, capsys):
    session, _ = _session_with_oom_snapshot(tmp_path)
    db = sqlite3.connect(session)
    db.execute("UPDATE schema_version SET version = 'two'")
    db.commit()
    db.close()
    assert main(["export", str(session), "--out", str(tmp_path / "x.csv")]) == 0
    err = capsys.readouterr().err
    assert "schema version cannot be read" in err and "Traceback" not in err


def test_a_ten_thousand_character_snapshot_path_is_one_line(tmp_path, capsys):
    session, _ = _session_with_oom_snapshot(tmp_path)
    db = sqlite3.connect(session)
    db.execute(
        "UPDATE events SET data = json_set(data, '$.snapshot_path', ?) WHERE kind = 'oom'",
        ("/tmp/" + "x" * 10_000,),
    )
    db.commit()
    db.close()
    assert main(["export", str(session), "--out", str(tmp_path / "x.csv")]) == 0
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if "snapshot" in line]
    assert "not a usable path" in line and len(line) < 300


def test_a_link_planted_where_sqlite_puts_its_journal_is_refused(tmp_path, capsys):
    precious = tmp_path / "precious"
    precious.write_text("keep")
    out = tmp_path / "run.vramscope"
    (tmp_path / "run.vramscope-wal").symlink_to(precious)
    assert main(["record", "--demo", "--duration", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "run.vramscope-wal already exists beside run.vramscope" in err
    assert precious.read_text() == "keep" and not out.exists()
