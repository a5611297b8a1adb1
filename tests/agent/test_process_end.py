"""The run's last words: one final dump, from the process that started the agent.

- A forked child (``os.fork`` exiting normally, DataLoader fork workers)
  writes nothing and leaves the parent's socket alone.
- SIGTERM (what a job scheduler sends) and SIGINT/SIGHUP where the script
  does not handle them: the final dump is written, the socket removed, and
  the signal ends the process as it would have (the same exit status).
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import vramscope

APP_DIR = os.path.dirname(os.path.dirname(os.path.abspath(vramscope.__file__)))

TRAIN = textwrap.dedent("""
    import os, sys, signal, time
    import torch
    torch.set_num_threads(1)
    from vramscope import agent
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    a = agent.start(model=model, optimizer=opt, interval=0.05)
    a.wait_started(5)
    def train(n):
        for _ in range(n):
            opt.zero_grad()
            model(torch.randn(8, 16)).square().mean().backward()
            opt.step()
    train(5)
""")


def run(code: str, runtime_dir: str, prelude: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=APP_DIR, VRAMSCOPE_RUNTIME_DIR=runtime_dir)
    return subprocess.run(
        [sys.executable, "-c", prelude + TRAIN + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def dumps(runtime_dir: str) -> list[dict]:
    out = []
    for path in glob.glob(os.path.join(runtime_dir, "**", "*.final.json"), recursive=True):
        with open(path) as f:
            out.append({"path": path, "data": json.load(f)})
    return out


def sockets(runtime_dir: str) -> list[str]:
    return [
        p
        for p in glob.glob(os.path.join(runtime_dir, "**", "*"), recursive=True)
        if not p.endswith(".json") and not os.path.isdir(p)
    ]


@pytest.mark.slow
def test_a_forked_child_and_dataloader_workers_write_no_dump(runtime_dir):
    r = run(
        """
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # a normal exit: the interpreter's exit handlers run in the child
        os.waitpid(pid, 0)
        data = torch.utils.data.TensorDataset(torch.randn(64, 16))
        loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=2,
                                             multiprocessing_context="fork")
        for (x,) in loader:
            opt.zero_grad(); model(x).square().mean().backward(); opt.step()
        print("child", pid, "parent", os.getpid())
    """,
        runtime_dir,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    child, parent = (int(w) for w in r.stdout.split()[1::2])
    found = dumps(runtime_dir)
    assert len(found) == 1, [d["path"] for d in found]
    assert f"-{parent}-" in os.path.basename(found[0]["path"])
    assert not sockets(runtime_dir)


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_termination_signal_writes_the_dump_and_keeps_the_exit_status(runtime_dir, sig):
    # SIGINT: with Python's own handler it is a KeyboardInterrupt, and the normal exit writes
    # the dump; here the launcher left it at the default, as job schedulers and nohup may; SIGHUP: a test
    # run under nohup passes SIG_IGN on to the child, which the agent rightly respects
    prelude = f"import signal; signal.signal(signal.{sig}, signal.SIG_DFL)\n" if sig != "SIGTERM" else ""
    r = run(
        f"""
        print(os.getpid(), flush=True)
        os.kill(os.getpid(), signal.{sig})
        time.sleep(5)
        print("still here")
    """,
        runtime_dir,
        prelude,
    )
    assert r.returncode == -getattr(signal, sig), (r.returncode, r.stderr)
    assert "still here" not in r.stdout
    found = dumps(runtime_dir)
    assert len(found) == 1
    assert f"-{r.stdout.split()[0]}-" in os.path.basename(found[0]["path"])
    assert not sockets(runtime_dir)
