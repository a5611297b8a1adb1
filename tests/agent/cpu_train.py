"""A small CPU training loop used by the agent tests as a child process.

usage: cpu_train.py OUT_JSON STEPS SLEEP [HIDDEN] [--agent]   (--agent: start the agent in code)
Writes the real tensor sizes (computed here, independently of the agent) to OUT_JSON.
"""

import json
import os
import sys
import time

import torch

out, steps, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
args = [a for a in sys.argv[4:] if not a.startswith("--")]
hidden = int(args[0]) if args else 256
t_import = time.time()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
if "--agent" in sys.argv:
    from vramscope import agent

    agent.start(model=model, optimizer=opt, interval=0.1)


def nbytes(tensors):
    seen, total = set(), 0
    for t in tensors:
        key = t.untyped_storage().data_ptr()
        if key not in seen:
            seen.add(key)
            total += t.untyped_storage().nbytes()
    return total


def write(done):
    params = list(model.parameters())
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    info = {
        "pid": os.getpid(),
        "t_import": t_import,
        "steps_done": done,
        "weights": nbytes(params),
        "gradients": nbytes([p.grad for p in params if p.grad is not None]),
        "optimizer_state": nbytes(state),
    }
    with open(out + ".tmp", "w") as f:
        json.dump(info, f)
    os.replace(out + ".tmp", out)


for i in range(steps):
    x = torch.randn(32, 128)
    loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 10, (32,)))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i == 0:
        write(1)
    time.sleep(pause)
write(steps)
if os.environ.get("CPU_TRAIN_WAIT"):  # keep running until told to stop (a file appears)
    while not os.path.exists(os.environ["CPU_TRAIN_WAIT"]):
        time.sleep(0.05)
sys.exit(int(os.environ.get("CPU_TRAIN_EXIT", "0")))
