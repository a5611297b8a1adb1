"""A session written before a figure column existed opens as a whole session:
the figure reads as not available, nothing is called damaged, the rest is
read. Each figure column the format has is taken away in turn from a recorded
session (an agent with modules, two GPUs, processes), as a file of an earlier
format would lack it, and the session is read and exported."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from tests.core.session.helpers import T0
from tests.core.session.test_module_sessions import record
from vramscope.core.export import export_csv
from vramscope.core.agent_figures.module_figures import FIGURES
from vramscope.core.session import open_session
from vramscope.core.session.schema import AGENT_COLUMNS, BUCKET_COLUMNS, GPU_COLUMNS, PROCESS_FACTS

# (table, column) for every figure a later version may add a column for
ADDED_LATER = (
    [("agent_samples", c) for c in (*AGENT_COLUMNS, *BUCKET_COLUMNS)]
    + [("gpu_samples", c) for c in GPU_COLUMNS]
    + [("agent_modules", c) for c in (*FIGURES, "shared", "why")]
    + [("processes", c) for c in PROCESS_FACTS]
    + [("agent_info", c) for c in ("hostname", "rank", "local_rank", "world_size", "allocator_settings")]
    + [("frames", c) for c in ("error", "driver_version", "nvml_version", "cuda_driver_version")]
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("older") / "now.vramscope"
    record(path)
    with open_session(path) as r:
        assert not r.problems
        whole = (len(r.samples.gpu_columns()), len(r.samples.modules()), r.frame_at(T0 + 4))
    return path, whole


@pytest.mark.parametrize("table,column", ADDED_LATER, ids=[f"{t}.{c}" for t, c in ADDED_LATER])
def test_a_session_without_a_later_figure_column_is_read_whole(recorded, tmp_path, table, column):
    source, (gpu_times, module_rows, frame) = recorded
    older = tmp_path / "older.vramscope"
    shutil.copyfile(source, older)
    db = sqlite3.connect(older)
    db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.commit()
    db.close()
    with open_session(older) as r:
        assert r.problems == [], r.problems
        assert len(r.samples.gpu_columns()) == gpu_times
        assert len(r.samples.modules()) == module_rows
        back = r.frame_at(T0 + 4)
        assert len(back.gpus) == len(frame.gpus) and len(back.agents) == len(frame.agents)
        assert {m.name for m in back.agents[0].modules} == {m.name for m in frame.agents[0].modules}
        if table == "agent_modules" and column in FIGURES:
            assert all(getattr(m, column) is None for m in back.agents[0].modules)
        summary = export_csv(r, tmp_path / "older.csv")
    assert not getattr(summary, "problems", None)
