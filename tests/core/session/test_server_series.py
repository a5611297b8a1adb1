"""An inference server's KV-cache use and requests are recorded and reopen as series."""

from __future__ import annotations

import dataclasses

import numpy as np

from vramscope.core.processes.servers import ServerState, server_key
from vramscope.core.session import load_into_store
from vramscope.core.session import open_session
from vramscope.core.session.writer import SessionWriter
from vramscope.core.store.store import Store

from tests.core.session.helpers import T0, frame


def test_server_metrics_survive_a_session(tmp_path):
    path = tmp_path / "served.vramscope"
    writer = SessionWriter(path, meta={"source": "test"})
    for k in range(12):
        srv = ServerState(
            pid=5555,
            start_time=T0 - 5,
            kind="vllm",
            pids=(5555,),
            port=8000,
            pool="--gpu-memory-utilization 0.9",
            kv_cache_usage=None if k == 3 else k / 20,
            running=float(k % 4),
            waiting=0.0,
        )
        writer(dataclasses.replace(frame(k), servers=(srv,)))
    writer.close()
    with open_session(path) as r:
        store = load_into_store(r, Store())
    t, kv = store.series(server_key(5555, T0 - 5, "kv_cache_usage"))
    assert list(t) == [T0 + k for k in range(12)]
    assert np.isnan(kv[3]) and kv[11] == 11 / 20  # "not available" stays not available
    _, running = store.series(server_key(5555, T0 - 5, "running"))
    assert list(running) == [float(k % 4) for k in range(12)]


def test_nan_and_inf_server_metrics_reach_status_json_and_the_trace_as_null(tmp_path):
    """Metrics that are not numbers (a server publishing NaN or +Inf) are "not
    available": null in `status --json` and in the Perfetto trace, which stay
    JSON every reader parses (RFC 8259 has no NaN or Infinity)."""
    import argparse
    import io
    import json

    from vramscope.commands.status import emit
    from vramscope.core.export.trace_export import export_trace

    def strict(text):
        return json.loads(text, parse_constant=lambda name: pytest_fail(name))

    def pytest_fail(name):
        raise AssertionError(f"{name} in the output")

    bad = ServerState(
        pid=5555,
        start_time=T0 - 5,
        kind="vllm",
        pids=(5555,),
        port=8000,
        kv_cache_usage=float("nan"),
        running=float("inf"),
        waiting=-float("inf"),
    )
    out = io.StringIO()
    emit(dataclasses.replace(frame(0), servers=(bad,)), argparse.Namespace(json=True), out)
    (server,) = strict(out.getvalue())["servers"]
    assert server["kv_cache_usage"] is None and server["running"] is None
    path = tmp_path / "served.vramscope"
    writer = SessionWriter(path, meta={"source": "test"})
    for k in range(3):
        writer(dataclasses.replace(frame(k), servers=(bad,)))
    writer.close()
    with open_session(path) as r:
        export_trace(r, tmp_path / "trace.json")
    trace = strict((tmp_path / "trace.json").read_text())
    assert trace["traceEvents"]
