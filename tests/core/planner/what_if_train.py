"""A CPU training loop with the agent, as a child of tests/core/planner/test_what_if_pid.py.

usage: what_if_train.py KIND BATCH READY_FILE STOP_FILE

Trains (tests/core/planner/what_if_runs.py's models) at BATCH with the agent
started in code. Each step's activations saved for backward are counted per
module with the test's own saved-tensor hooks and put in the agent's ring as
the "modules" item an agent with per-module figures sends -- the wire format
`vramscope plan --pid` reads. After a few steps it writes READY_FILE and
trains on until STOP_FILE appears.
"""

import os
import sys
import time

import torch
from torch import nn

from tests.core.planner.what_if_runs import SavedCount, batch_for, make
from vramscope import agent
from vramscope.agent.protocol import ItemKind
from vramscope.agent.serving.ring import DEFAULT_CAPS

kind, batch, ready, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# this child sends its own, independently counted "modules" items; the agent's own
# per-module sampler would send others (its activations n/a under this child's
# saved-tensor hooks) and plan --pid would read whichever came last
os.environ["VRAMSCOPE_MODULES"] = "0"
torch.set_num_threads(1)
model = make(kind)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
a = agent.start(model=model, optimizer=opt, interval=0.05, ring_caps={**DEFAULT_CAPS, ItemKind.MODULES: 16})
step = 0
while not os.path.exists(stop) and step < 2000:
    x, y = batch_for(kind, batch)
    opt.zero_grad()
    count = SavedCount(model)
    with count:
        out = model(x)
        loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    loss.backward()
    opt.step()
    step += 1
    a.ring.push(
        ItemKind.MODULES, {"t": time.time(), "step": step, "device": "cpu", "modules": count.module_rows()}
    )
    if step == 5:
        with open(ready, "w") as f:
            f.write(str(os.getpid()))
    time.sleep(0.02)
