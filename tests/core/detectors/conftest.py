"""Real child processes for the end-process tests (actions and the alerts panel)."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest

SLEEPER = "import time; print('ready', flush=True); time.sleep(120)"
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(120)"
)


@pytest.fixture(autouse=True)
def no_real_jupyter_servers(monkeypatch, tmp_path):
    """The rules never ask the user's own Jupyter servers during tests."""
    from vramscope.core.detectors import jupyter

    monkeypatch.setattr(jupyter, "runtime_dirs", lambda: [tmp_path / "jupyter-runtime"])


@pytest.fixture(autouse=True)
def monitor_runs_as_alice(monkeypatch):
    """The hand-built frames' processes belong to "alice": the monitor is her."""
    from vramscope.core.detectors import naming

    monkeypatch.setattr(naming, "_me", lambda: "alice")


@pytest.fixture
def start_child():
    """start_child(code=SLEEPER) -> (Popen, start time): a real process, ready, ended after the test."""
    children = []

    def start(code=SLEEPER, **kw):
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **kw)
        assert p.stdout.readline().strip() == "ready"
        children.append(p)
        return p, psutil.Process(p.pid).create_time()

    yield start
    for p in children:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
