"""A recording of several machines (`record --host a --host b`, through the
stand-in ssh) keeps each GPU's and each process's host: the CSV has a host
column, the trace names the hosts, and files written before the host was
stored still open."""

from __future__ import annotations

import pytest
import csv
import json
import sqlite3
import subprocess
import sys

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.session import SessionWriter, open_session
from vramscope.core.session.schema import META_HOST_GPU_BLOCK, META_HOSTS
from vramscope.sources.remote.hosts import HOST_BLOCK


def vramscope(*args, timeout=90):
    return subprocess.run(
        [sys.executable, "-m", "vramscope", *args], capture_output=True, text=True, timeout=timeout
    )


def record_two_hosts(hosts, sleepers, out) -> dict:
    """lab-a (two A6000s) and lab-b (one 4090), each running a process of its
    own, and one PID that both show (the same pid and start time on two
    machines is two processes). Returns the pids."""
    own_a, own_b, both = sleepers(3)
    hosts.add(
        "lab-a",
        FakeState(
            gpus=[
                FakeGpu(
                    name="NVIDIA RTX A6000",
                    total=48 * GiB,
                    used=30 * GiB,
                    processes=[FakeProcess(own_a, 20 * GiB, sm=80), FakeProcess(both, 5 * GiB, sm=0)],
                ),
                FakeGpu(name="NVIDIA RTX A6000", total=48 * GiB, used=2 * GiB),
            ]
        ),
    )
    hosts.add(
        "lab-b",
        FakeState(
            gpus=[
                FakeGpu(
                    name="NVIDIA GeForce RTX 4090",
                    total=24 * GiB,
                    used=11 * GiB,
                    processes=[FakeProcess(own_b, 7 * GiB, sm=0), FakeProcess(both, 3 * GiB, sm=0)],
                )
            ]
        ),
    )
    r = vramscope(
        "record",
        "--host",
        "lab-a",
        "--host",
        "lab-b",
        "--interval",
        "0.2",
        "--duration",
        "4",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return {"a": own_a, "b": own_b, "both": both}


@pytest.mark.slow
def test_a_two_host_recording_exports_with_the_host_of_every_row(hosts, sleepers, tmp_path):
    session = tmp_path / "fleet.vramscope"
    pids = record_two_hosts(hosts, sleepers, session)

    with open_session(session) as reader:  # stored with the session, read back
        assert [(g.index, g.host, g.host_index) for g in reader.gpus()] == [
            (0, "lab-a", 0),
            (1, "lab-a", 1),
            (HOST_BLOCK, "lab-b", 0),
        ]
        shared = sorted(p.host for p in reader.processes().values() if p.pid == pids["both"])
        assert shared == ["lab-a", "lab-b"]

    out = tmp_path / "fleet.csv"
    r = vramscope("export", str(session), "--format", "csv", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.DictReader(open(out)))
    assert list(rows[0]) == ["time", "host", "gpu", "pid", "metric", "value"]
    totals = {(x["host"], x["gpu"]): int(x["value"]) for x in rows if x["metric"] == "total" and not x["pid"]}
    assert totals == {("lab-a", "0"): 48 * GiB, ("lab-a", "1"): 48 * GiB, ("lab-b", "0"): 24 * GiB}
    used = {
        (x["host"], x["gpu"], int(x["pid"])): int(x["value"])
        for x in rows
        if x["metric"] == "used" and x["pid"]
    }
    assert used == {
        ("lab-a", "0", pids["a"]): 20 * GiB,
        ("lab-a", "0", pids["both"]): 5 * GiB,
        ("lab-b", "0", pids["b"]): 7 * GiB,
        ("lab-b", "0", pids["both"]): 3 * GiB,
    }
    seen = {(x["host"], int(x["pid"])) for x in rows if x["metric"] == "command"}
    assert seen == {
        ("lab-a", pids["a"]),
        ("lab-a", pids["both"]),
        ("lab-b", pids["b"]),
        ("lab-b", pids["both"]),
    }
    assert all(x["host"] in ("lab-a", "lab-b") for x in rows)  # no row without its machine

    trace = tmp_path / "fleet.json"
    r = vramscope("export", str(session), "--format", "perfetto", "--out", str(trace))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(trace.read_text())
    names = {
        e["pid"]: e["args"]["name"]
        for e in doc["traceEvents"]
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    assert sorted(n for n in names.values() if " GPU " in n) == [
        "lab-a GPU 0: NVIDIA RTX A6000",
        "lab-a GPU 1: NVIDIA RTX A6000",
        "lab-b GPU 0: NVIDIA GeForce RTX 4090",
    ]
    procs = [n for n in names.values() if f"pid {pids['both']} " in n]
    assert sorted(n.split(f"pid {pids['both']} ")[1].split(",")[0] for n in procs) == ["on lab-a", "on lab-b"]
    tracks = {
        e["name"]
        for e in doc["traceEvents"]
        if e.get("ph") == "C" and e["pid"] in names and " GPU " not in names[e["pid"]]
    }
    assert tracks == {"GPU0 memory", "GPU0 SM"}  # each host's own index, not 64
    assert doc["otherData"]["hosts"] == ["lab-a", "lab-b"]

    redacted = tmp_path / "shared.csv"
    r = vramscope("export", str(session), "--format", "csv", "--redact", "--out", str(redacted))
    assert r.returncode == 0, r.stdout + r.stderr
    text = redacted.read_text()
    assert "lab-a" not in text and "lab-b" not in text
    assert {x["host"] for x in csv.DictReader(open(redacted))} == {"host1", "host2"}


def _gpu(index, host=None, host_index=None, pid=4242):
    proc = GpuProcess(
        pid=pid, used=GiB, info=ProcessInfo(pid=pid, start_time=1000.0, user="alice", name="python")
    )
    return GpuSample(
        index=index,
        name="NVIDIA A100",
        uuid=f"GPU-{index}",
        total=80 * GiB,
        used=2 * GiB,
        processes=(proc,),
        host=host,
        host_index=host_index,
    )


def _without_host_columns(path) -> None:
    """The file as vramscope wrote it before the host was stored with each GPU and process."""
    db = sqlite3.connect(path)
    for table, column in (("gpus", "host"), ("gpus", "host_index"), ("processes", "host")):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.commit()
    db.close()


def test_sessions_written_before_the_host_was_stored_still_open(tmp_path):
    local = tmp_path / "local.vramscope"
    with SessionWriter(local) as w:
        w.on_frame(Frame(time=2000.0, gpus=(_gpu(0),)))
    _without_host_columns(local)
    with open_session(local) as reader:
        frame = reader.latest_frame()
        assert [g.label for g in frame.gpus] == ["GPU 0"]
        assert [p.host for p in reader.processes().values()] == [None]

    # a --host recording from then: placed by the hosts its meta lists
    remote = tmp_path / "remote.vramscope"
    meta = {"source": "ssh", META_HOSTS: ["lab-a", "lab-b"], META_HOST_GPU_BLOCK: HOST_BLOCK}
    with SessionWriter(remote, meta=meta) as w:
        w.on_frame(Frame(time=2000.0, gpus=(_gpu(0, "lab-a", 0), _gpu(HOST_BLOCK, "lab-b", 0))))
    _without_host_columns(remote)
    with open_session(remote) as reader:
        assert [g.label for g in reader.latest_frame().gpus] == ["lab-a GPU 0", "lab-b GPU 0"]
        out = tmp_path / "remote.csv"
        from vramscope.core.export import export_csv

        export_csv(reader, out)
    places = {(x["host"], x["gpu"]) for x in csv.DictReader(open(out)) if x["metric"] == "total"}
    assert places == {("lab-a", "0"), ("lab-b", "0")}


def test_redaction_names_hosts_host1_host2_without_touching_other_words():
    from vramscope.core.export.redact import Redactor

    red = Redactor([], hosts=["lab-a", "alice@gpu-box", "lab-a", None])
    assert (red.host("lab-a"), red.host("alice@gpu-box"), red.host(None)) == ("host1", "host2", None)
    said = "train.py on lab-a GPU 0; alice@gpu-box GPU 1 (lab-ab, gpu-box.lab-a.net untouched)"
    assert red.text(said) == "train.py on host1 GPU 0; host2 GPU 1 (lab-ab, gpu-box.lab-a.net untouched)"
    assert Redactor([], enabled=False, hosts=["lab-a"]).text(said) == said
