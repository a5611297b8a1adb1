"""One monitor pass with silent agent sockets (issue 24; figures, not a timed test).

    .venv/bin/python bench/agent_sockets.py                 # 50 silent sockets
    .venv/bin/python bench/agent_sockets.py --silent 200 --passes 40

A runtime directory holds --silent sockets named like agents' that accept
every connection and never answer (a hostile or hung neighbour), and one
real agent (in this process, allocator replayed). The monitor's client
(sources/agents/agent_client.py) runs --passes passes, one per --interval, with its
default budget for agents (PASS_BUDGET). Printed: the first pass (every
silent socket is new), the later ones (the silent sockets tried again after
their pause), whether the real agent was seen connected in every pass, and
the same passes with no silent sockets side by side. Budget: no pass waits
on agents longer than PASS_BUDGET (+ scheduling noise).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import socket
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "app")]

from vramscope.agent.serving import paths  # noqa: E402
from vramscope.agent.core import Agent  # noqa: E402
from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_ramp  # noqa: E402
from vramscope.core.samples import Frame  # noqa: E402
from vramscope.sources.agents.agent_client import PASS_BUDGET, AgentClient  # noqa: E402


def silent_sockets(directory: str, n: int) -> list[socket.socket]:
    out = []
    for i in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(os.path.join(directory, paths.socket_name(60000 + i, 1)))
        s.listen(128)
        out.append(s)
    return out


def passes(directory: str, n: int, interval: float) -> tuple[list[float], int]:
    """Pass durations (s) and how many passes saw the real agent connected."""
    client = AgentClient(dirs=[directory])
    took, seen = [], 0
    try:
        for _ in range(n):
            started = time.monotonic()
            frame = client(Frame(time=time.time()))
            took.append(time.monotonic() - started)
            seen += any(r.connected and r.pid == os.getpid() for r in frame.agents)
            time.sleep(max(0.0, interval - took[-1]))
    finally:
        client.close()
    return took, seen


def describe(took: list[float]) -> str:
    later = took[1:] or took
    return (
        f"first {took[0] * 1e3:7.1f} ms | later: median {statistics.median(later) * 1e3:6.1f} ms, "
        f"max {max(later) * 1e3:7.1f} ms"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--silent", type=int, default=50)
    p.add_argument("--passes", type=int, default=20)
    p.add_argument("--interval", type=float, default=1.0)
    args = p.parse_args()
    directory = tempfile.mkdtemp(prefix="vs-bench-")  # short: AF_UNIX paths are <= 107 bytes
    agent = Agent(
        interval=0.1,
        provider=ReplayProvider(scenario_ramp(), loop=True),
        runtime_dir=directory,
        discover=False,
        final_dump=False,
    )
    agent.start()
    try:
        assert agent.wait_started(5) and agent.server is not None, agent.server_error
        print(
            f"budget for agents per pass: {PASS_BUDGET * 1e3:.0f} ms; {args.passes} passes, "
            f"one per {args.interval:g} s"
        )
        took, seen = passes(directory, args.passes, args.interval)
        print(f"no silent sockets:      {describe(took)} | agent connected in {seen}/{len(took)}")
        held = silent_sockets(directory, args.silent)
        took, seen = passes(directory, args.passes, args.interval)
        print(
            f"{args.silent:3d} silent sockets:     {describe(took)} | agent connected in {seen}/{len(took)}"
        )
        over = [t for t in took if t > PASS_BUDGET * 1.1]
        print(f"passes over the budget (+10 %): {len(over)}")
        for s in held:
            s.close()
    finally:
        agent.stop()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
