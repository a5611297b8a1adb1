"""An inference server's KV-cache use and requests are recorded and reopen as series."""

from __future__ import annotations

import dataclasses

import numpy as np

from vramscope.core.servers import ServerState, server_key
from vramscope.core.session import load_into_store
from vramscope.core.session import open_session
from vramscope.core.session.writer import SessionWriter
from vramscope.core.store import Store

from tests.session.helpers import T0, frame


def test_server_metrics_survive_a_session(tmp_path):
    path = tmp_path / "served.vramscope"
    writer = SessionWriter(path, meta={"source": "test"})
    for k in range(12):
        srv = ServerState(pid=5555, start_time=T0 - 5, kind="vllm", pids=(5555,), port=8000,
                          pool="--gpu-memory-utilization 0.9",
                          kv_cache_usage=None if k == 3 else k / 20, running=float(k % 4),
                          waiting=0.0)
        writer(dataclasses.replace(frame(k), servers=(srv,)))
    writer.close()
    with open_session(path) as r:
        store = load_into_store(r, Store())
    t, kv = store.series(server_key(5555, T0 - 5, "kv_cache_usage"))
    assert list(t) == [T0 + k for k in range(12)]
    assert np.isnan(kv[3]) and kv[11] == 11 / 20  # "not available" stays not available
    _, running = store.series(server_key(5555, T0 - 5, "running"))
    assert list(running) == [float(k % 4) for k in range(12)]
