"""Every launcher (issue 47, item 4): ``torch.multiprocessing.spawn`` ranks get an agent
under ``vramscope run``; a process that leaves by ``os._exit`` leaves no socket that a
monitor lists as alive."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from vramscope.agent.serving import paths
from vramscope.core.samples import Frame
from vramscope.sources.agents.agent_client import AgentClient

VRAMSCOPE = [sys.executable, "-m", "vramscope"]

pytestmark = pytest.mark.timeout(180)

SPAWN = r"""
import os, sys, time
import torch
import torch.multiprocessing as mp
import vramscope.agent as a

def rank(i, out):
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step()
    agent = a.get()
    with open(f"{out}.{i}", "w") as f:
        f.write(f"{os.getpid()} {agent is not None and agent.steps.count}")

def worker(q):
    import vramscope.agent as b
    q.put(b.get() is None)

if __name__ == "__main__":
    mp.spawn(rank, args=(sys.argv[1],), nprocs=2)
    ctx = mp.get_context("spawn"); q = ctx.Queue()
    p = ctx.Process(target=worker, args=(q,)); p.start()  # a plain helper: no agent
    print(q.get(timeout=60)); p.join()
"""


@pytest.mark.slow
def test_spawn_ranks_get_their_own_agent_and_plain_helpers_none(tmp_path, runtime_dir):
    script = tmp_path / "spawned.py"
    script.write_text(SPAWN)
    out = tmp_path / "rank"
    r = subprocess.run(
        VRAMSCOPE + ["run", "--", sys.executable, str(script), str(out)],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stdout.split() == ["True"]  # the helper process: no agent
    ranks = [(tmp_path / f"rank.{i}").read_text().split() for i in range(2)]
    assert [steps for _pid, steps in ranks] == ["3", "3"]  # each rank's own agent counted its steps
    pids = {int(pid) for pid, _steps in ranks}
    assert len(pids) == 2 and os.getpid() not in pids
    # each rank left its final dump (the monitor reads the run after it ended)
    finals = {
        p[0]
        for p in (paths.parse_name(n) for n in os.listdir(runtime_dir))
        if p and p[2] != paths.SOCKET_SUFFIX
    }
    assert pids <= finals


EXIT = r"""
import os, sys, time
import torch
import vramscope.agent as a
model = torch.nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
agent = a.start(model=model, optimizer=opt, interval=0.05)
agent.wait_started(10)
for _ in range(3):
    opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step()
if sys.argv[1] == "fork":  # a forked helper outlives the process (it inherited the listener)
    if os.fork() == 0:
        time.sleep(30); os._exit(0)
print(os.getpid(), flush=True)
time.sleep(float(sys.argv[2]))
os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("helper", ["none", "fork"])
def test_a_process_gone_by_os_exit_is_not_listed_alive(tmp_path, runtime_dir, helper):
    script = tmp_path / "exits.py"
    script.write_text(EXIT)
    client = AgentClient()
    proc = subprocess.Popen(
        [sys.executable, str(script), helper, "1.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid = int(proc.stdout.readline())
    seen_alive = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        frame = client(Frame(time=time.time()))
        seen_alive = seen_alive or any(r.pid == pid for r in frame.agents)
        time.sleep(0.1)
    assert proc.wait(20) == 0
    assert seen_alive, "the running process was never listed"
    # gone: within two passes it is no longer listed as a live agent, and its socket is gone
    listed = None
    for _ in range(2):
        frame = client(Frame(time=time.time()))
        listed = [r for r in frame.agents if r.pid == pid and r.connected]
    assert not listed, listed
    assert not [
        n
        for n in os.listdir(runtime_dir)
        if n.startswith(f"agent-{pid}-") and n.endswith(paths.SOCKET_SUFFIX)
    ]
    # and the next agent to start removes whatever a dead process left
    stale = os.path.join(runtime_dir, paths.socket_name(pid, 1))
    open(stale, "w").close()
    assert stale in paths.remove_stale(runtime_dir)
