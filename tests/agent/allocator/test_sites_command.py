"""`vramscope sites PID --steps N` against a live agent: the sites and the overhead it
prints, and the one line it says where recording is not available."""

from __future__ import annotations

import os
import re
import threading
import time

from tests.agent.allocator.test_sites import _traced, fake_torch
from vramscope.sources.demo.allocator_replay import GiB, ReplayProvider, memory_stats_dict
from vramscope.cli import main


def _stepping(agent, stop):
    while not stop.is_set():
        agent.steps.count += 1
        agent.steps.last_duration = 0.05
        time.sleep(0.05)


def _live(make_agent, torch=None):
    agent = make_agent(ReplayProvider([{0: memory_stats_dict(GiB, 2 * GiB)}], loop=True))
    if torch is not None:
        agent.sites.torch_module = torch
    agent.start()
    assert agent.wait_started()
    return agent


def test_sites_command_prints_the_top_sites_and_the_pickle(make_agent, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("VRAMSCOPE_SNAPSHOT_DIR", str(tmp_path))
    agent = _live(make_agent, fake_torch(_traced()))
    stop = threading.Event()
    t = threading.Thread(target=_stepping, args=(agent, stop), daemon=True)
    t.start()
    try:
        assert main(["sites", str(os.getpid()), "--steps", "2", "--timeout", "60"]) == 0
    finally:
        stop.set()
        t.join()
    out = capsys.readouterr().out
    # the recording ends on the agent thread's first turn after the 2nd step: a late turn
    # counts the steps taken by then (and says so)
    done = re.search(rf"allocation sites over (\d+) steps of PID {os.getpid()}", out)
    assert done is not None and int(done.group(1)) >= 2, out
    assert "190.0 MiB      3x  /home/a/proj/train.py:88 in forward" in out
    assert "snapshot (open at pytorch.org/memory_viz): " + str(tmp_path) in out


def test_sites_command_on_cpu_only_torch_says_why(make_agent, capsys):
    _live(make_agent)  # the real torch of this venv: a CPU-only build
    assert main(["sites", str(os.getpid()), "--steps", "2"]) == 1
    err = capsys.readouterr().err
    assert "CPU-only build" in err and len(err.strip().splitlines()) == 1


def test_sites_command_for_a_process_without_an_agent(runtime_dir, capsys):
    assert main(["sites", str(os.getpid())]) == 2
    assert "runs no vramscope agent" in capsys.readouterr().err
