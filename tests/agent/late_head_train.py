"""A training loop whose head is loaded whole (torch.load) after the first backwards and
summed into the known model's loss: a child process for the agent tests.

usage: late_head_train.py DIR   -- writes DIR/head.pt, then DIR/paused (its pid) once the head's first
backward and the first model's step are done; waits for DIR/release; then trains on until
the agent has met the head and five step boundaries more have passed, writes the real
gradient bytes (computed here, independently of the agent) to DIR/real.json, and waits,
training no more, until DIR/done. (The five steps: the figure written is one the agent
has seen settle at step boundaries; a model met after a loop's last step has its backward
watched from the main thread's next statement, tests/agent/tensors/test_agent_thread_grads.py.)
"""

import json
import os
import sys
import time

import torch

import vramscope.agent

here = sys.argv[1]
torch.manual_seed(0)


def mlp(width):
    return torch.nn.Sequential(
        torch.nn.Linear(64, width), torch.nn.BatchNorm1d(width), torch.nn.ReLU(), torch.nn.Linear(width, 8)
    )


torch.save(mlp(96), os.path.join(here, "head.pt"))
first = mlp(128)
opt = torch.optim.Adam(first.parameters())
head = None
agent = vramscope.agent.get()
assert agent is not None, "no agent: run this under `vramscope run`"
after_met = None  # step boundaries since the agent met the head
deadline = None
i = 0
while after_met is None or after_met < 5:
    opt.zero_grad()
    loss = first(torch.randn(16, 64)).square().mean()
    if i == 20:  # (a checkpoint of a head, loaded whole)
        head = torch.load(os.path.join(here, "head.pt"), weights_only=False)
    if head is not None:
        head.zero_grad()
        loss = loss + head(torch.randn(16, 64)).square().mean()
    loss.backward()
    del loss
    opt.step()
    if i == 20:  # the head has gradients, no optimizer, and no forward since: not met yet
        with open(os.path.join(here, "paused.tmp"), "w") as f:
            f.write(str(os.getpid()))
        os.replace(os.path.join(here, "paused.tmp"), os.path.join(here, "paused"))
        while not os.path.exists(os.path.join(here, "release")):
            time.sleep(0.02)
        deadline = time.monotonic() + 60
    if after_met is not None:
        after_met += 1
    elif head is not None and i > 20 and {id(p) for p in head.parameters()} <= agent.registry.known_ids():
        after_met = 0
    assert deadline is None or time.monotonic() < deadline, "the agent never met the head"
    i += 1
    time.sleep(0.01)
grads = [p.grad for m in (first, head) for p in m.parameters() if p.grad is not None]
real = {"pid": os.getpid(), "gradients": sum(g.untyped_storage().nbytes() for g in grads)}
with open(os.path.join(here, "real.json.tmp"), "w") as f:
    json.dump(real, f)
os.replace(os.path.join(here, "real.json.tmp"), os.path.join(here, "real.json"))
end = time.monotonic() + 90
while not os.path.exists(os.path.join(here, "done")) and time.monotonic() < end:
    time.sleep(0.05)  # (seen until the test is done)
