"""A real CPU training loop whose agent reads a simulated CUDA allocator (the
allocator's statistics and segments replayed as PyTorch's CUDA API gives them:
sources/demo/allocator_replay.py) -- then an out-of-memory error reported to the agent
as PyTorch's OOM observer reports it. The run holds on until told to stop.

usage: cuda_sim_train.py OUT_JSON   (CPU_TRAIN_WAIT: a file whose appearance ends it)
"""

import json
import os
import sys
import time

import torch

from tests.agent import snapshots as S
from vramscope import agent
from vramscope.sources.demo import allocator_replay as replay
from vramscope.sources.demo.allocator_replay import GiB, MiB, ReplayProvider

out = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
provider = ReplayProvider(replay.scenario_oom(), loop=True, snapshot=S.fragmented())
running = agent.start(model=model, optimizer=opt, interval=0.1, provider=provider)
for _ in range(40):
    x = torch.randn(32, 128)
    loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 10, (32,)))
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.02)
running._on_oom(0, 3 * GiB, 23 * GiB, 200 * MiB)  # what torch's OOM observer calls
with open(out + ".tmp", "w") as f:
    json.dump({"pid": os.getpid()}, f)
os.replace(out + ".tmp", out)
while not os.path.exists(os.environ["CPU_TRAIN_WAIT"]):
    time.sleep(0.1)
