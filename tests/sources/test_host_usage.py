"""Host CPU % and resident memory of GPU processes, read from /proc each pass."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from vramscope.sources.machine.host_usage import HostUsage, read_cpu_rss


@pytest.fixture
def busy_and_idle():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(64 << 20); time.sleep(60)"])
    time.sleep(0.5)
    yield busy.pid, idle.pid
    for p in (busy, idle):
        p.kill()
        p.wait()


@pytest.mark.slow
def test_a_busy_process_shows_cpu_an_idle_one_none_and_both_their_memory(busy_and_idle):
    busy, idle = busy_and_idle
    usage = HostUsage()
    first = usage.read([busy, idle])
    assert first[busy][0] is None and first[idle][0] is None  # no figure before a second pass
    time.sleep(1.0)
    second = usage.read([busy, idle])
    assert second[busy][0] > 20  # a spinning loop (the machine is shared: not always 100)
    assert second[idle][0] < 5
    assert second[idle][1] >= 64 << 20  # the 64 MiB it holds are resident


def test_a_gone_process_has_no_figures_not_zeros():
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(done.stdout)
    assert read_cpu_rss(pid) is None
    assert HostUsage().read([pid]) == {pid: (None, None)}


def test_a_reused_pid_gets_no_cpu_figure_from_the_old_process():
    readings = iter([(100.0, 1), (2.0, 1)])  # CPU time went down: another process
    usage = HostUsage(clock=iter([0.0, 1.0]).__next__, reader=lambda pid: next(readings))
    usage.read([7])
    assert usage.read([7]) == {7: (None, 1)}
