"""The agent changes nothing the training computes, eager or under torch.compile.

Two processes train the same seeded loops (eager, then ``torch.compile`` with
the ``aot_eager`` backend: Dynamo and AOTAutograd as on a GPU, no compiler
needed), one with the agent registered on the model and optimizer, one
without: the losses are bit-identical, Dynamo records no graph break and
compiles one graph, and nothing is printed on either stream.
"""

from __future__ import annotations

import pytest
import json
import os
import subprocess
import sys
import textwrap

import vramscope

APP_DIR = os.path.dirname(os.path.dirname(os.path.abspath(vramscope.__file__)))

LOOP = textwrap.dedent("""
    import json, sys, tempfile
    import torch
    from torch._dynamo.utils import counters
    with_agent = sys.argv[1] == "agent"
    torch.set_num_threads(1)

    def loop(compiled):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 4))
        opt = torch.optim.AdamW(model.parameters())
        agent = None
        if with_agent:
            from vramscope.agent.core import Agent
            from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_phases
            frames, _ = scenario_phases(steps=3)
            agent = Agent(interval=0.05, provider=ReplayProvider(frames, loop=True),
                          runtime_dir=tempfile.mkdtemp(prefix="vs-"), final_dump=False)
            agent.watch(model=model, optimizer=opt)
            agent.start()
            agent.wait_started(5)
        run = torch.compile(model, backend="aot_eager") if compiled else model
        losses = []
        for i in range(12):
            opt.zero_grad(set_to_none=i % 2 == 0)
            loss = run(torch.randn(8, 16)).square().mean()
            loss.backward()
            opt.step()
            losses.append(loss.item().hex())
            if agent is not None and i % 4 == 0:
                agent.sample_once()
        errors = None
        if agent is not None:
            agent.stop()
            errors = agent.errors + agent.steps.errors + agent.phases.errors + agent.backward.errors
        return losses, errors

    eager, e1 = loop(False)
    compiled, e2 = loop(True)
    out = {"eager": eager, "compiled": compiled, "errors": [e1, e2],
           "graph_breaks": sum(counters["graph_break"].values()),
           "graphs": counters["stats"]["unique_graphs"]}
    print(json.dumps(out))
""")


def run(mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=APP_DIR)
    r = subprocess.run(
        [sys.executable, "-c", LOOP, mode], capture_output=True, text=True, timeout=300, env=env
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1, r.stdout  # nothing else printed
    return json.loads(lines[0])


@pytest.mark.slow
def test_losses_are_bit_identical_with_and_without_the_agent_eager_and_compiled(runtime_dir):
    without, with_agent = run("none"), run("agent")
    assert with_agent["eager"] == without["eager"]
    assert with_agent["compiled"] == without["compiled"]
    assert with_agent["errors"] == [0, 0]
    assert with_agent["graph_breaks"] == without["graph_breaks"] == 0
    assert with_agent["graphs"] == without["graphs"] == 1
