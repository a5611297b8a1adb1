"""Fixtures for the GPU checks (run where a GPU is lent; each module skips without CUDA)."""

from __future__ import annotations

import shutil
import tempfile

import pytest


@pytest.fixture
def agent():
    """An in-process agent on the real CUDA provider, its socket in a private dir; the
    test starts it (interval 60 s: the test takes the samples it checks)."""
    from vramscope.agent.core import Agent

    d = tempfile.mkdtemp(prefix="vs-")
    a = Agent(interval=60.0, runtime_dir=d, discover=False, final_dump=False)
    yield a
    a.stop()
    shutil.rmtree(d, ignore_errors=True)
