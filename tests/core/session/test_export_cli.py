"""`vramscope export` and the OOM snapshots it copies for memory_viz."""

from __future__ import annotations

import json
import pathlib
import pickle
import stat

from vramscope.cli import main
from vramscope.core.samples import AgentEvent, AgentReport, Frame
from vramscope.core.session import SessionWriter
from vramscope.core.store.store import Store

from tests.core.session.helpers import T0, frame


def _session_with_oom_snapshot(tmp_path):
    snap = tmp_path / "oom-4242.pickle"
    snapshot = {
        "segments": [{"device": 0, "address": 0, "total_size": 2 << 20, "blocks": []}],
        "device_traces": [[]],
    }
    snap.write_bytes(pickle.dumps(snapshot, protocol=4))
    path = tmp_path / "oom.vramscope"
    store = Store()
    w = SessionWriter(path)
    store.listeners.subscribe(w)
    for k in range(5):
        store.append(frame(k))
    oom = AgentReport(
        pid=4242,
        start_time=T0 - 100,
        events=(AgentEvent("oom", T0 + 5.5, {"device": "cuda:0", "snapshot_path": str(snap)}),),
    )
    store.append(Frame(time=T0 + 6, gpus=frame(6).gpus, agents=(oom,)))
    w.close()
    return path, snapshot


def test_export_copies_oom_snapshots_as_memory_viz_pickles(tmp_path, capsys):
    path, snapshot = _session_with_oom_snapshot(tmp_path)
    out = tmp_path / "trace.json"
    assert main(["export", str(path), "--format", "perfetto", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "memory_viz" in said
    (copied,) = (tmp_path / "trace.json.oom-snapshots").iterdir()
    assert stat.S_IMODE(copied.stat().st_mode) == 0o600
    raw = copied.read_bytes()
    assert raw[:2] == b"\x80\x04"  # pickle protocol 4, as memory_viz reads
    assert pickle.loads(raw) == snapshot
    ooms = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "oom"]
    assert ooms and ooms[0]["pid"] == 4242 and ooms[0]["name"] == "OOM"


def test_export_redact_leaves_snapshots_out(tmp_path, capsys):
    path, _ = _session_with_oom_snapshot(tmp_path)
    out = tmp_path / "r.csv"
    assert main(["export", str(path), "--out", str(out), "--redact"]) == 0
    assert "not copied with --redact" in capsys.readouterr().err
    assert not (tmp_path / "r.csv.oom-snapshots").exists()
    assert "oom-4242.pickle" in out.read_text()  # the file name, not the path
    assert str(tmp_path) not in out.read_text()


def test_export_does_not_overwrite(tmp_path, capsys):
    path, _ = _session_with_oom_snapshot(tmp_path)
    out = tmp_path / "x.csv"
    out.write_text("keep me")
    assert main(["export", str(path), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "keep me"
    assert main(["export", str(path), "--out", str(out), "--force"]) == 0
    assert out.read_text().startswith("time,host,gpu,pid,metric,value\n")


def test_record_refuses_an_existing_out_file(tmp_path, capsys):
    out = tmp_path / "exists.vramscope"
    out.write_text("precious")
    assert main(["record", "--demo", "--out", str(out), "--duration", "1"]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "precious"


def test_export_without_out_writes_beside_the_session(tmp_path, capsys):
    path, _snapshot = _session_with_oom_snapshot(tmp_path)
    assert main(["export", str(path)]) == 0
    assert (tmp_path / "oom.csv").is_file() and str(tmp_path / "oom.csv") in capsys.readouterr().out
    assert main(["export", str(path), "--format", "perfetto"]) == 0
    assert json.loads((tmp_path / "oom.perfetto.json").read_text())["traceEvents"]
    assert main(["export", str(path)]) == 2  # never overwritten without --force


def test_export_of_a_closed_session_leaves_nothing_beside_it(tmp_path):
    """`record` then `export` as installed: the directory holds the session and the
    export, no -wal or -shm (a closed session is one file)."""
    import os
    import subprocess
    import sys

    app = str(pathlib.Path(__file__).resolve().parents[3] / "app")
    env = dict(os.environ, PYTHONPATH=app)

    def vramscope(*args):
        done = subprocess.run(
            [sys.executable, "-m", "vramscope", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return done

    vramscope("record", "--demo", "--out", "s.vramscope", "--interval", "0.2", "--duration", "1")
    assert sorted(os.listdir(tmp_path)) == ["s.vramscope"]
    for fmt, out in (("csv", "s.csv"), ("perfetto", "s.json")):
        vramscope("export", "s.vramscope", "--format", fmt, "--out", out)
    assert sorted(os.listdir(tmp_path)) == ["s.csv", "s.json", "s.vramscope"]
