"""The Perfetto/Chrome trace is well-formed: what the trace viewers require of it."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from vramscope.core.export import export_trace
from vramscope.core.session import SessionWriter, open_session
from vramscope.core.store.store import Store
from vramscope.sources.demo.simulated import SimulatedSource

from tests.core.session.helpers import record


@pytest.fixture(scope="module")
def demo_trace(tmp_path_factory):
    """Ten minutes of the demo workstation (jobs come and go, agents, steps)."""
    d = tmp_path_factory.mktemp("trace")
    path = d / "demo.vramscope"
    source = SimulatedSource(seed=3, start_time=1_700_000_000.0)
    store = Store()
    writer = SessionWriter(path, meta={"source": "demo", "simulated": True})
    store.listeners.subscribe(writer)
    for k in range(600):
        store.append(source.sample(1_700_000_000.0 + k))
    writer.close()
    out = d / "demo.json"
    with open_session(path) as r:
        export_trace(r, out, chunk_seconds=120)  # several chunks: state carried across them
    return json.loads(out.read_text())


@pytest.mark.slow
def test_every_counter_event_is_complete_and_tracks_are_monotone(demo_trace):
    events = demo_trace["traceEvents"]
    counters = [e for e in events if e["ph"] == "C"]
    assert len(counters) > 1000
    last = {}
    for e in counters:
        assert {"ph", "ts", "pid", "tid", "name", "args"} <= set(e), e
        assert isinstance(e["ts"], int) and e["args"]
        assert all(isinstance(v, (int, float)) for v in e["args"].values()), e
        for arg in e["args"]:
            track = (e["pid"], e["name"], arg)
            assert e["ts"] >= last.get(track, -1), f"ts goes back on {track}"
            last[track] = e["ts"]
    for e in events:
        assert e["ph"] in ("C", "M", "i")
        if e["ph"] == "i":
            assert {"ts", "pid", "tid", "name", "s"} <= set(e)


def test_tracks_per_gpu_process_and_agent_bucket(demo_trace):
    events = demo_trace["traceEvents"]
    named = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    tracks = defaultdict(set)
    for e in events:
        if e["ph"] == "C":
            for arg in e["args"]:
                tracks[e["pid"]].add(f"{e['name']} {arg}")
    gpu_pids = [p for p, n in named.items() if n.startswith("GPU ")]
    assert len(gpu_pids) == 2
    for p in gpu_pids:
        assert {"memory used", "memory total", "utilization gpu"} <= tracks[p]
    bucket_tracks = {t for ts in tracks.values() for t in ts if " buckets " in t}
    assert {"cuda:0 buckets weights", "cuda:0 buckets optimizer_state"} <= bucket_tracks
    assert all(p in named for p in tracks), "every counter's process has a name"
    assert any("GPU1 memory used" in ts for ts in tracks.values())
    steps = [e for e in events if e["ph"] == "i" and e.get("cat") == "step"]
    assert len(steps) > 100


def test_trace_redact(tmp_path):
    path = tmp_path / "s.vramscope"
    record(path, n=10)
    out = tmp_path / "r.json"
    with open_session(path) as r:
        export_trace(r, out, redact=True)
    text = out.read_text()
    assert "alice" not in text and "train.py" not in text and '"host"' not in text
    assert json.loads(text)["otherData"]["redacted"] is True
