"""What was recorded is what reopens and what exports."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from vramscope.core.export import export_csv, export_trace
from vramscope.core.export.context import GPU_TRACE_PID
from vramscope.core.session import SessionExistsError, load_into_store, open_session
from vramscope.core.store.store import Store

from tests.core.session.helpers import T0, frame, record


@pytest.fixture
def session(tmp_path):
    path = tmp_path / "s.vramscope"
    store = record(path, n=40, oom_at=30)
    return path, store


def test_reopened_frame_equals_recorded(session):
    path, store = session
    with open_session(path) as r:
        assert r.span() == (T0, T0 + 39)
        assert [g.name for g in r.gpus()] == ["Test GPU A", "Test GPU B"]
        for k in (0, 19, 25, 39):
            original, reopened = frame(k, oom=(k == 30)), r.frame_at(T0 + k)
            assert reopened.time == original.time
            assert len(reopened.gpus) == len(original.gpus) == 2
            for a, b in zip(original.gpus, reopened.gpus):
                assert (
                    a.index,
                    a.name,
                    a.uuid,
                    a.total,
                    a.used,
                    a.free,
                    a.reserved,
                    a.util_gpu,
                    a.util_memory,
                    a.temperature,
                    a.power_w,
                ) == (
                    b.index,
                    b.name,
                    b.uuid,
                    b.total,
                    b.used,
                    b.free,
                    b.reserved,
                    b.util_gpu,
                    b.util_memory,
                    b.temperature,
                    b.power_w,
                )
                assert [
                    (
                        p.pid,
                        p.used,
                        p.sm,
                        p.kinds,
                        p.has_agent,
                        p.info.start_time,
                        p.info.user,
                        p.info.command,
                    )
                    for p in a.processes
                ] == [
                    (
                        p.pid,
                        p.used,
                        p.sm,
                        p.kinds,
                        p.has_agent,
                        p.info.start_time,
                        p.info.user,
                        p.info.command,
                    )
                    for p in b.processes
                ]
            (agent,) = reopened.agents
            assert agent.devices == original.agents[0].devices
            assert agent.step == k
            assert [e.kind for e in agent.events] == [e.kind for e in original.agents[0].events]
        # not available stays not available
        xorg = [p for p in r.frame_at(T0 + 3).gpus[0].processes if p.pid == 900][0]
        assert xorg.used is None and xorg.sm is None
        assert r.frame_at(T0 + 3).gpus[0].util_memory is None
        assert r.recorded.alerts()[0]["title"] == "allocated rises 4 MiB per step"
        assert r.recorded.actions()[0]["result"] == "SIGTERM sent"


def test_reused_pid_is_a_second_identity(session):
    path, _ = session
    with open_session(path) as r:
        same_pid = [p for p in r.processes().values() if p.pid == 5555]
        assert sorted(p.start_time for p in same_pid) == [T0 - 5, T0 + 24.5]


def test_loaded_store_equals_live_store(session):
    path, live = session
    with open_session(path) as r:
        loaded = load_into_store(r)
    assert loaded.latest.time == live.latest.time
    assert set(live.keys()) <= set(loaded.keys())
    for key in live.keys():
        a, b = live.series(key), loaded.series(key)
        np.testing.assert_array_equal(a[0], b[0], err_msg=str(key))
        np.testing.assert_array_equal(a[1], b[1], err_msg=str(key))
    # agent series come back too, under the agent client's key
    t, v = loaded.series(("agent", 4242, T0 - 100, "cuda:0", "allocated"))
    assert len(t) == 40 and v[-1] == float(frame(39).agents[0].devices[0].allocated)


def test_long_session_uses_peaks_for_old_span(tmp_path):
    """Older than the fine tier: the loaded store holds the same 10 s peaks as a live one."""
    path = tmp_path / "long.vramscope"
    live = record(path, n=300, store=Store(fine_points=50))
    with open_session(path) as r:
        loaded = load_into_store(r, Store(fine_points=50))
    for key in live.keys(("gpu",)) + [("proc", 0, 4242, T0 - 100, "used")]:
        a, b = live.series(key), loaded.series(key)
        np.testing.assert_array_equal(a[0], b[0], err_msg=str(key))
        np.testing.assert_array_equal(a[1], b[1], err_msg=str(key))


def test_csv_values_equal_recorded(session, tmp_path):
    path, _ = session
    out = tmp_path / "s.csv"
    with open_session(path) as r:
        export_csv(r, out)
    rows = list(csv.DictReader(open(out)))
    assert list(rows[0]) == ["time", "host", "gpu", "pid", "metric", "value"]
    assert {x["host"] for x in rows} == {""}  # this machine's recording: host left empty
    got = {(round(float(x["time"]), 6), x["gpu"], x["pid"], x["metric"]): x["value"] for x in rows}
    for k in range(40):
        f = frame(k, oom=(k == 30))
        t = round(f.time, 6)
        for g in f.gpus:
            for metric in (
                "used",
                "total",
                "free",
                "reserved",
                "util_gpu",
                "util_memory",
                "temperature",
                "power_w",
            ):
                value = getattr(g, metric)
                key = (t, str(g.index), "", metric)
                if value is None:
                    assert key not in got  # n/a is left out, never written as 0
                else:
                    assert float(got[key]) == pytest.approx(value, abs=1e-3), key
            for p in g.processes:
                key = (t, str(g.index), str(p.pid), "used")
                if p.used is None:
                    assert key not in got
                else:
                    assert int(got[key]) == p.used
                if p.sm is not None:
                    assert int(got[(t, str(g.index), str(p.pid), "sm")]) == p.sm
        dev = f.agents[0].devices[0]
        assert int(got[(t, "0", "4242", "agent.allocated")]) == dev.allocated
        assert int(got[(t, "0", "4242", "agent.bucket.optimizer_state")]) == dev.buckets.optimizer_state
    times = [float(x["time"]) for x in rows]
    assert times == sorted(times)
    kinds = {x["metric"] for x in rows}
    assert {"event.step", "event.oom", "alert.leak", "action.terminate", "command"} <= kinds


def test_csv_redact(session, tmp_path):
    path, _ = session
    out = tmp_path / "r.csv"
    with open_session(path) as r:
        export_csv(r, out, redact=True)
    text = out.read_text()
    assert "alice" not in text and "train.py" not in text and "root" not in text
    assert "user1" in text and "[command line redacted]" in text


def _counter_values(events, pid, name, arg):
    return [
        (e["ts"], e["args"][arg])
        for e in events
        if e.get("ph") == "C" and e["pid"] == pid and e["name"] == name and arg in e["args"]
    ]


def _value_at(track, ts):
    """A counter is a step function: the last value at or before ts."""
    value = None
    for t, v in track:
        if t <= ts:
            value = v
    return value


def test_trace_values_equal_recorded(session, tmp_path):
    path, _ = session
    out = tmp_path / "s.json"
    with open_session(path) as r:
        export_trace(r, out)
    trace = json.load(open(out))
    events = trace["traceEvents"]
    assert trace["otherData"]["start_time"] == T0
    gpu0_used = _counter_values(events, GPU_TRACE_PID, "memory", "used")
    trainer = _counter_values(events, 4242, "GPU0 memory", "used")
    for k in range(40):
        f = frame(k)
        ts = round(k * 1e6)
        assert _value_at(gpu0_used, ts) == f.gpus[0].used
        assert _value_at(trainer, ts) == f.gpus[0].processes[0].used
    # the exited job drops to 0 when NVML stops listing it; its PID's successor is apart
    first_job = _counter_values(events, 5555, "GPU1 memory", "used")
    assert _value_at(first_job, 19e6) == 1 << 30 and _value_at(first_job, 20e6) == 0
    names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert any("eval.py" in n for n in names) and any("train.py" in n for n in names)
    # n/a memory (Xorg) never becomes a counter value
    assert not _counter_values(events, 900, "GPU0 memory", "used")
    buckets = [e for e in events if e.get("name") == "cuda:0 buckets"]
    assert len(buckets) == 40 and "other_allocated" not in buckets[0]["args"]
    assert buckets[0]["args"]["optimizer_state"] == 1 << 30
    kinds = {(e["ph"], e.get("cat")) for e in events if e["ph"] == "i"}
    assert {("i", "step"), ("i", "oom"), ("i", "alert"), ("i", "action")} <= kinds


def test_record_refuses_to_overwrite(session):
    path, _ = session
    from vramscope.core.session import SessionWriter

    before = path.read_bytes()
    with pytest.raises(SessionExistsError, match="already exists"):
        SessionWriter(path)
    assert path.read_bytes() == before


def test_empty_session_opens(tmp_path):
    from vramscope.core.session import SessionWriter

    path = tmp_path / "empty.vramscope"
    SessionWriter(path).close()
    with open_session(path) as r:
        assert r.span() is None and r.latest_frame() is None
        assert load_into_store(r).latest is None
        export_csv(r, tmp_path / "e.csv")
        export_trace(r, tmp_path / "e.json")
    assert (tmp_path / "e.csv").read_text() == "time,host,gpu,pid,metric,value\n"
    assert json.load(open(tmp_path / "e.json"))["traceEvents"][-1]["name"] == "session end"
