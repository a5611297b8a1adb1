"""Real child processes for the end-process tests (actions and the alerts panel)."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest

SLEEPER = "import time; print('ready', flush=True); time.sleep(120)"
STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(120)")


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
