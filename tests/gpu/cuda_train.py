"""A small CUDA training loop for tests/gpu (run under `vramscope run`).

usage: cuda_train.py OUT_JSON RELEASE_FILE
Trains 20 AdamW steps, then writes what PyTorch itself says (tensor sizes,
memory_stats) while idle, then provokes one OOM (a 1 TB tensor), writes again,
and waits for RELEASE_FILE.
"""

import json
import os
import sys
import time

import torch

out, release = sys.argv[1], sys.argv[2]
dev = torch.device("cuda:0")
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for _ in range(20):
    x = torch.randn(256, 4096, device=dev)
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
del x, loss
torch.cuda.synchronize()


def nbytes(tensors):
    seen, total = set(), 0
    for t in tensors:
        if t is None or t.device.type != "cuda":
            continue
        key = t.untyped_storage().data_ptr()
        if key not in seen:
            seen.add(key)
            total += t.untyped_storage().nbytes()
    return total


def write(**extra):
    stats = torch.cuda.memory_stats(dev)
    params = list(model.parameters())
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    info = {
        "pid": os.getpid(),
        "t": time.time(),
        "weights": nbytes(params),
        "gradients": nbytes([p.grad for p in params]),
        "optimizer_state": nbytes(state),
        "allocated": stats["allocated_bytes.all.current"],
        "reserved": stats["reserved_bytes.all.current"],
        "num_ooms": stats.get("num_ooms"),
        **extra,
    }
    with open(out + ".tmp", "w") as f:
        json.dump(info, f)
    os.replace(out + ".tmp", out)


write(phase="trained")
time.sleep(2.0)  # let the agent publish the idle state
try:
    torch.empty(10**12, dtype=torch.uint8, device=dev)
    oom = False
except torch.cuda.OutOfMemoryError:
    oom = True
write(phase="oom", oom=oom)
while not os.path.exists(release):
    time.sleep(0.05)
