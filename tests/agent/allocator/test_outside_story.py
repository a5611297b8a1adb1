"""Outside PyTorch, explained: NVML's per-process figure minus PyTorch's reserved,
its baseline and its jumps paired with the events that came with them. End to
end with the fake NVML (tests/fakenvml.py) listing this test's own PID and an
agent in this process whose allocator figures are replayed (a CPU build has no
CUDA allocator): ``torch.distributed.init_process_group`` really runs (gloo)
and the jump NVML shows after it is named by it; a rise no event explains is
said to have none; a small wobble is no jump."""

from __future__ import annotations

import pytest
import json
import math
import os
import socket
import time

import torch

from fakenvml import FakeGpu, FakeProcess, FakeState, GiB, MiB
from vramscope.sources.demo.allocator_replay import ReplayProvider, memory_stats_dict
from vramscope.core.agent_figures.outside_story import CAUSES, story, story_from_store
from vramscope.agent.protocol import EventKind
from vramscope.core.store.store import Store

RESERVED = 3 * GiB


def test_baseline_jumps_and_their_events():
    t = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    v = [500 * MiB, 500 * MiB, 810 * MiB, 820 * MiB, math.nan, 900 * MiB]
    s = story(t, v, [(1.6, CAUSES[EventKind.PROCESS_GROUP_INIT]), (0.2, "too early")])
    assert s.baseline == 500 * MiB and s.now == 900 * MiB
    assert [(j.t, j.size, j.cause) for j in s.jumps] == [
        (2.0, 310 * MiB, "process-group init (NCCL)"),
        (5.0, 80 * MiB, None),
    ]  # 10 MiB: no jump
    assert "baseline 500.0 MiB (CUDA context)" in s.text() and "no event came with it" in s.text()
    assert story([], [], []).text() is None  # no figure: nothing said, not a 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_process_group_jump_is_named_end_to_end(fake_nvml, make_agent, monkeypatch):
    from vramscope.sources.agents.agent_client import AgentClient
    from vramscope.sources.nvml.nvml_source import NvmlSource

    pid = os.getpid()

    def nvml_says(used):
        fake_nvml.write(FakeState(gpus=[FakeGpu(used=used, processes=[FakeProcess(pid, used, sm=30)])]))

    provider = ReplayProvider([{0: memory_stats_dict(2 * GiB, RESERVED)}], loop=True, totals={0: 24 * GiB})
    a = make_agent(provider=provider)
    a.watch(model=torch.nn.Linear(4, 4))
    a.start()
    assert a.wait_started()
    store = Store()
    client = AgentClient(store=store, dirs=[os.path.dirname(a.socket_path)] if a.socket_path else None)
    source = NvmlSource()

    def frame():
        time.sleep(0.15)  # a sample or two from the agent
        return client(source.sample(time.time()))

    try:
        nvml_says(RESERVED + 500 * MiB)  # the CUDA context
        frame()
        frame()
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", str(_free_port()))
        torch.distributed.init_process_group("gloo", rank=0, world_size=1)
        try:
            nvml_says(RESERVED + 820 * MiB)  # NCCL's buffers would land here
            frame()
            frame()
        finally:
            torch.distributed.destroy_process_group()
        time.sleep(3)  # long after the event
        nvml_says(RESERVED + 900 * MiB)
        got = frame()
    finally:
        source.close()
        client.close()
    (report,) = [r for r in got.agents if r.pid == pid]
    s = story_from_store(store, pid, report.start_time, "cuda:0")
    assert s.baseline == 500 * MiB
    assert [(j.size, j.cause) for j in s.jumps] == [
        (320 * MiB, "process-group init (NCCL)"),
        (80 * MiB, None),
    ]


def test_torch_compile_is_reported_and_the_wrapper_goes_with_the_agent(make_agent):
    original_compile = torch.compile
    a = make_agent(provider=ReplayProvider([{0: memory_stats_dict(GiB, GiB)}], loop=True))
    a.start()
    assert a.wait_started()
    try:
        compiled = torch.compile(torch.nn.Linear(4, 4), backend="eager")
        assert compiled(torch.randn(2, 4)).shape == (2, 4)  # the user's result, unchanged
        a.serving.drain()
        kinds = [
            it["event"] for it in (json.loads(b) for b in a.ring.all_items()) if it.get("kind") == "event"
        ]
        assert EventKind.COMPILE in kinds
    finally:
        a.stop()
    assert torch.compile is original_compile  # nothing of the agent left in torch
