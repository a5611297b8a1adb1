"""Ending a process from the window goes through its sampler process
(sources/remote/local_sampler.py SamplerActions), whose recorder keeps it in the
session: the action is in the session the window's sampler wrote."""

from __future__ import annotations

import time

import psutil

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.core.session import open_session
from vramscope.core.stream.first_look import is_pending
from vramscope.sources.remote.local_sampler import LocalSamplerSource, SamplerActions


def test_a_process_ended_from_the_window_is_in_the_sampler_s_session(fake_nvml, sleepers, monkeypatch):
    [pid] = sleepers(1)
    for name, value in fake_nvml.env().items():  # the sampler process loads the fake too
        monkeypatch.setenv(name, value)
    fake_nvml.write(
        FakeState(gpus=[FakeGpu(total=24 * GiB, used=3 * GiB, processes=[FakeProcess(pid, 2 * GiB)])])
    )
    start = psutil.Process(pid).create_time()
    source = LocalSamplerSource(["--record-session"], 0.3, name="nvml").start()
    try:
        frame = source.sample(time.time())
        if is_pending(frame):  # its first look: the GPU before its processes are read
            assert frame.gpus[0].used == 3 * GiB and frame.gpus[0].processes == ()
            frame = source.sample(time.time())
        assert [p.pid for g in frame.gpus for p in g.processes] == [pid]
        path = source.session_path
        assert path is not None
        actions = SamplerActions(source)
        summary = actions.describe(pid, start)
        assert summary.refusal is None and summary.host is None  # this machine: no host named
        result = actions.terminate(pid, start)
        assert result.ok, result.message
        assert not result.message.startswith("localhost")
        assert actions.wait_gone(pid, start, 10.0)
    finally:
        source.close()
    recorded = [(a["action"], a["pid"]) for a in open_session(path).recorded.actions()]
    assert ("SIGTERM", pid) in recorded


def test_ending_refused_while_the_sampler_is_down_says_why():
    source = LocalSamplerSource([], 1.0, name="nvml")  # never started
    result = SamplerActions(source).terminate(4242, 1.0)
    assert not result.ok and "not connected" in result.message
