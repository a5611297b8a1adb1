"""Per-module breakdown: what it adds to a training step (issue 25, item 1's budget).

    .venv/bin/python bench/module_overhead.py [--blocks 8] [--steps 40] [--layers 4] [--d 256]

A small GPT-style transformer (tests/agent/module_models.py TinyGPT, fp32,
AdamW, batch 8 x 128 tokens) trains on the CPU (on CUDA where there is one).
Blocks of ``--steps`` steps alternate: the agent off / the whole agent on
(replayed allocator, default interval, model and optimizer registered, the
per-module sampling on by default and choosing its own one-in-N), so drift on a
shared machine hits both sides alike. Figures:

- the average step time with / without (budget: ratio <= 1.01);
- the sampled steps: their time against the median step of the adjacent block
  without the agent (budget: <= 1.05), the one-in-N the agent chose, and the training
  thread's CPU time (time.thread_time) with the same comparison;
- the same sampled-step ratio with sampling forced on every step
  (MIN_EVERY = 1), for a clean pairing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "app"), ROOT]

import torch  # noqa: E402

from tests.agent.module_models import TinyGPT  # noqa: E402
from vramscope.agent.modules import module_sampler  # noqa: E402
from vramscope.agent.core import Agent  # noqa: E402
from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_phases  # noqa: E402


def block(model, opt, steps, agent_on, device, seq):
    agent = None
    if agent_on:
        frames, _ = scenario_phases(steps=3)
        agent = Agent(
            provider=ReplayProvider(frames, loop=True),
            runtime_dir=tempfile.mkdtemp(prefix="vs-"),
            final_dump=False,
            discover=False,
        )
        agent.watch(model=model, optimizer=opt)
        agent.start()
        agent.wait_started(5)
    walls, cpus, sampled = [], [], []
    g = torch.Generator().manual_seed(1)
    for i in range(steps):
        idx = torch.randint(0, 512, (8, seq), generator=g).to(device)
        before = agent.module_sampler.measured if agent else 0
        w0, c0 = time.perf_counter(), time.thread_time()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(idx).flatten(0, 1), idx.flatten())
        loss.backward()
        opt.step()
        if device != "cpu":
            torch.cuda.synchronize()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.thread_time() - c0)
        sampled.append(agent is not None and agent.module_sampler.measured > before)
    every = agent.module_sampler.every if agent else None
    if agent is not None:
        agent.stop()
    return walls, cpus, sampled, every


def run(args, device):
    torch.manual_seed(0)
    model = TinyGPT(vocab=512, d=args.d, layers=args.layers).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    block(model, opt, 5, False, device, args.seq)  # warm-up
    off_w, on_w, off_c, on_c, samp_w, samp_c, everies = [], [], [], [], [], [], []
    for b in range(args.blocks):
        pair = {}
        for on in (False, True) if b % 2 == 0 else (True, False):
            walls, cpus, sampled, every = block(model, opt, args.steps, on, device, args.seq)
            pair[on] = walls[2:], cpus[2:], sampled[2:], every  # the agent's first steps: start-up
        (walls, cpus, sampled, every), (ow, oc, _, _) = pair[True], pair[False]
        off_w += ow
        off_c += oc
        on_w += walls
        on_c += cpus
        everies.append(every)
        # a sampled step against the median step of the adjacent block without the agent
        samp_w += [w / statistics.median(ow) for w, s in zip(walls, sampled) if s]
        samp_c += [c / statistics.median(oc) for c, s in zip(cpus, sampled) if s]
    return off_w, on_w, off_c, on_c, samp_w, samp_c, everies


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--seq", type=int, default=128)
    args = p.parse_args()
    torch.set_num_threads(1)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(
        f"torch {torch.__version__} on {device}; TinyGPT d={args.d} layers={args.layers}, batch 8 x {args.seq}"
    )
    off_w, on_w, off_c, on_c, samp_w, samp_c, everies = run(args, device)
    mean = statistics.fmean
    print(
        f"step (wall) off {mean(off_w) * 1e3:.1f} ms, on {mean(on_w) * 1e3:.1f} ms: "
        f"ratio {mean(on_w) / mean(off_w):.4f} (budget <= 1.01)"
    )
    print(
        f"step (training thread CPU) off {mean(off_c) * 1e3:.1f} ms, on {mean(on_c) * 1e3:.1f} ms: "
        f"ratio {mean(on_c) / mean(off_c):.4f}"
    )
    print(f"one step in N chosen: {sorted(set(everies))}")
    if samp_w:
        print(
            f"sampled steps: {len(samp_w)}; against the median step without the agent: wall "
            f"median {statistics.median(samp_w):.3f} max {max(samp_w):.3f}; CPU median "
            f"{statistics.median(samp_c):.3f} max {max(samp_c):.3f} (budget <= 1.05)"
        )
    module_sampler.MIN_EVERY = 1
    module_sampler.BUDGET = 1e9
    module_sampler.FIRST_STEP = 0
    args.blocks = 2
    _, _, _, _, samp_w, samp_c, everies = run(args, device)
    if samp_w:
        print(
            f"sampling forced one step in {sorted(set(everies))}: sampled-step ratio wall median "
            f"{statistics.median(samp_w):.3f}, CPU median {statistics.median(samp_c):.3f}"
        )


if __name__ == "__main__":
    main()
