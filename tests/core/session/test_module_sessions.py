"""Per-module figures recorded in a session come back from it, and go into the
CSV (rows per module) and the Perfetto trace (a counter track per top-level module)."""

from __future__ import annotations

import csv
import dataclasses
import json
import sqlite3

from tests.core.session.helpers import T0, frame
from vramscope.core.export import export_csv, export_trace
from vramscope.core.agent_figures.module_figures import ModuleFigures
from vramscope.core.session import SessionWriter, open_session
from vramscope.core.store.store import Store

CKPT = "activation checkpointing: recomputed in backward"


def modules(step):
    return (
        ModuleFigures("transformer", None, 4000, 4000, 8000, 10_000 + step, step, "cuda:0"),
        ModuleFigures("transformer.h.0", "transformer", 2000, 2000, 4000, None, step, "cuda:0", why=CKPT),
        ModuleFigures("lm_head", None, 0, 0, 0, 700, step, "cuda:0", shared=True),
    )


def record(path):
    store = Store()
    w = SessionWriter(path)
    store.listeners.subscribe(w)
    for k in range(12):
        f = frame(k)
        step = 10 if k < 6 else 20  # the agent re-measures every 10 steps
        agent = dataclasses.replace(f.agents[0], modules=modules(step) if k >= 2 else ())
        store.append(dataclasses.replace(f, agents=(agent,)))
    w.close()


def test_modules_round_trip_through_a_session_and_are_written_once_per_step(tmp_path):
    path = tmp_path / "m.vramscope"
    record(path)
    with open_session(path) as r:
        assert r.frame_at(T0 + 1).agents[0].modules == ()
        got = {m.name: m for m in r.frame_at(T0 + 4).agents[0].modules}
        assert got == {m.name: m for m in modules(10)}
        later = r.frame_at(T0 + 11).agents[0].modules
        assert {m.measured_step for m in later} == {20}
        assert len(r.samples.modules()) == 6  # two sampled steps x three modules, not a row per frame
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM agent_modules").fetchone() == (6,)


def test_a_file_without_the_modules_table_still_opens(tmp_path):
    path = tmp_path / "old.vramscope"
    record(path)
    db = sqlite3.connect(path)
    db.execute("DROP TABLE agent_modules")
    db.commit()
    db.close()
    with open_session(path) as r:
        assert r.frame_at(T0 + 4).agents[0].modules == ()
        assert r.samples.modules() == []


def test_csv_has_rows_per_module_and_the_reason_where_a_figure_is_missing(tmp_path):
    path, out = tmp_path / "m.vramscope", tmp_path / "m.csv"
    record(path)
    with open_session(path) as r:
        export_csv(r, out)
    rows = [row for row in csv.DictReader(out.open()) if row["metric"].startswith("module.")]
    by = {(row["metric"], float(row["time"])): row for row in rows}
    t = T0 + 2
    assert by[("module.activations.transformer", t)]["value"] == "10010"
    assert by[("module.weights.transformer.h.0", t)]["value"] == "2000"
    assert ("module.activations.transformer.h.0", t) not in by  # not available: left out, never 0
    assert by[("module.why.transformer.h.0", t)]["value"] == CKPT
    assert by[("module.measured_step.lm_head", T0 + 6)]["value"] == "20"
    assert {row["pid"] for row in rows} == {"4242"}


def test_trace_has_a_counter_track_per_top_level_module(tmp_path):
    path, out = tmp_path / "m.vramscope", tmp_path / "m.json"
    record(path)
    with open_session(path) as r:
        export_trace(r, out)
    events = json.loads(out.read_text())["traceEvents"]
    tracks = [e for e in events if e.get("ph") == "C" and e["name"].startswith("module ")]
    assert {e["name"] for e in tracks} == {"module transformer", "module lm_head"}
    values = [e["args"]["activations"] for e in tracks if e["name"] == "module transformer"]
    assert values == [10_010, 10_020]
