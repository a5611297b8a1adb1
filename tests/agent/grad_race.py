"""Reproducer: reading ``p.grad`` on a second thread while the training thread runs
``zero_grad(set_to_none=True)`` crashes PyTorch (no backward needed).

    python tests/agent/grad_race.py raw [SECONDS]     # a bare thread reading p.grad: crashes
    python tests/agent/grad_race.py agent [SECONDS]   # the vramscope agent sampling: must not

``p.grad = None`` frees the old gradient while the parameter still points at it,
and freeing the gradient's Python object releases the GIL part way (seen with
gdb on torch 2.13: THPVariable_set_grad -> ... -> THPVariable_clear ->
PyEval_RestoreThread). A ``p.grad`` on another thread in that window takes a
tensor that is being freed: "free(): corrupted unsorted chunks", SIGABRT, or a
segfault in THPVariable_storage. ``raw`` dies within seconds here; ``agent``
runs the agent at its fastest interval on the same loop and must exit 0
(tests/agent/tensors/test_agent_thread_grads.py checks that the agent thread never
reads ``.grad``; this shows what that protects). Exit status: 0 when the loop
survived.
"""

import os
import shutil
import sys
import tempfile
import threading
import time

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "raw"
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(*[m for _ in range(50) for m in (torch.nn.Linear(64, 64), torch.nn.ReLU())])
params = list(model.parameters())
opt = torch.optim.SGD(params, lr=1e-4)
stop = threading.Event()
sys.setswitchinterval(1e-6)  # hand the GIL over as often as possible: the window opens more often


def read_grads():
    while not stop.is_set():
        for p in params:
            g = p.grad
            if g is not None:
                g.untyped_storage().nbytes()


if mode == "raw":
    threading.Thread(target=read_grads, daemon=True).start()
else:
    from vramscope.agent.core import MIN_INTERVAL, Agent

    rundir = tempfile.mkdtemp(prefix="vs-race-")
    agent = Agent(interval=MIN_INTERVAL, runtime_dir=rundir, discover=False, final_dump=False)
    agent.watch(model=model, optimizer=opt)
    agent.start()
x = torch.randn(8, 64)
steps = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    opt.zero_grad(set_to_none=True)
    model(x).square().mean().backward()
    opt.step()
    steps += 1
    if mode != "raw" and steps % 10 == 0:
        time.sleep(0.02)  # idle moments: the agent thread samples on its own
stop.set()
if mode != "raw":
    agent.stop()
    shutil.rmtree(rundir, ignore_errors=True)
    print(
        f"{mode}: {steps} steps, {agent.samples} samples "
        f"({agent.handoff.served} taken by the training thread), errors {agent.errors} {agent.last_error or ''}"
    )
else:
    print(f"{mode}: {steps} steps, no crash")
sys.stdout.flush()
os._exit(0)
