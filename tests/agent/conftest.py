"""Fixtures for the agent tests: a short private runtime dir, in-process agents."""

from __future__ import annotations

import shutil
import tempfile

import pytest

from vramscope.agent.core import Agent
from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_ramp


@pytest.fixture
def runtime_dir(monkeypatch):
    # AF_UNIX paths are limited to 107 bytes: keep it short, not under pytest's tmp_path
    d = tempfile.mkdtemp(prefix="vs-")
    monkeypatch.setenv("VRAMSCOPE_RUNTIME_DIR", d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def make_agent(runtime_dir):
    agents = []

    def make(provider=None, interval=0.05, **kw):
        kw.setdefault("discover", False)
        kw.setdefault("final_dump", False)
        a = Agent(
            interval=interval,
            provider=provider or ReplayProvider(scenario_ramp(), loop=True),
            runtime_dir=runtime_dir,
            **kw,
        )
        agents.append(a)
        return a

    yield make
    for a in agents:
        a.stop()
