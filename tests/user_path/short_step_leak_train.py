"""A training loop on ~2 ms steps that keeps 2 MiB more after every step (the leak the
PyTorch FAQ warns of, ``losses.append(loss)``), under the agent, for the user-path test
of the leak rule on steps too short for the agent to read after each one.

The allocator is a stand-in for a GPU's: allocated = 1 GiB + 2 MiB x the steps' kept
outputs, and each hook reading spins 20 us of CPU time, as one allocator read costs on
a GPU (bench/agent_thread_cost.py's ``--read-us``). Everything else is the agent's own:
its hooks, its CPU-time budget, its socket.

usage: short_step_leak_train.py OUT_JSON   (CPU_TRAIN_WAIT: a file whose appearance ends it)
Trains until that file appears, then writes OUT_JSON (its pid, steps, and the share of
steps whose record carries "allocated after the step").
"""

import json
import os
import sys
import time

import torch

from vramscope import agent
from vramscope.sources.demo.allocator_replay import GiB, MiB, memory_stats_dict

LEAK = 2 * MiB
READ_S = 20e-6


class LeakingAllocator:
    def __init__(self):
        self.kept = 0

    @property
    def allocated(self) -> int:
        return 1 * GiB + LEAK * self.kept

    @staticmethod
    def _spin() -> None:
        end = time.thread_time() + READ_S
        while time.thread_time() < end:
            pass

    def devices(self):
        return [0]

    def memory_stats(self, index):
        self._spin()
        a = self.allocated
        return memory_stats_dict(a, a + 256 * MiB)

    def allocated_peaks_now(self):
        self._spin()
        a = self.allocated
        return {0: (a, a)}

    def device_info(self, index):
        return {"uuid": None, "total": 80 * GiB, "name": "stand-in GPU"}

    def allocator_settings(self):
        return {"backend": "native", "expandable_segments": False, "max_split_size": None, "conf": ""}

    def snapshot(self, index=None):
        return {"segments": [], "device_traces": []}

    def history_enabled(self):
        return False


out, wait = sys.argv[1], os.environ["CPU_TRAIN_WAIT"]
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters())
x, y = torch.randn(160, 256), torch.randint(0, 10, (160,))  # ~2 ms of CPU a step here
allocator = LeakingAllocator()
running = agent.start(model=model, optimizer=opt, provider=allocator)  # the default interval
steps = 0
started = time.thread_time()
while not os.path.exists(wait):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    allocator.kept += 1  # (what the step keeps: alive after it)
    opt.step()
    steps += 1
cpu_step = (time.thread_time() - started) / max(1, steps)
running.serving.drain()
records = [json.loads(b) for b in running.ring.all_items()]
step_items = [r for r in records if r.get("kind") == "step"]
read = [
    s
    for s in step_items
    if any((d or {}).get("allocated_after") is not None for d in (s.get("devices") or {}).values())
]
numbers = [s["step"] for s in step_items]
with open(out + ".tmp", "w") as f:
    json.dump(
        {
            "pid": os.getpid(),
            "steps": steps,
            "cpu_step_s": cpu_step,
            # the steps the ring's records span, and those whose record carries a reading
            "span": (max(numbers) - min(numbers) + 1) if numbers else 0,
            "read": len(read),
        },
        f,
    )
os.replace(out + ".tmp", out)
