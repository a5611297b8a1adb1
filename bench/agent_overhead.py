"""Agent overhead: step time with and without the agent, one sample's cost, memory.

    .venv/bin/python bench/agent_overhead.py [--blocks 16] [--steps 300] [--no-client]

1. A small MLP trained on CUDA where there is one, else on the CPU with
   the allocator replayed (so every reading path runs). Blocks of steps
   alternate without / with the agent (a fresh agent per "with" block,
   default interval 0.5 s, model and optimizer registered, a monitor client
   in another process pulling every second), so drift on a shared machine
   hits both sides alike. Figures: median step time with / without (budget
   <= 1.01) and the share of steps that carry their after-step allocated
   reading (target 100 %: the leak rule reads every step).
2. One sample -- allocator statistics through the replay provider, buckets,
   JSON serialisation, ring push -- timed many times (budget <= 200 us).
3. Memory: the ring after 10x its capacity of samples and steps (bounded).
4. Phases: the training-thread work per step of the phase hooks (end of
   forward + output hook, end of backward, optimizer pre/post, the step's
   take), with the replay provider (1 device) and on a CPU-only run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc

import torch

from vramscope.agent.core import DEFAULT_INTERVAL, Agent
from vramscope.agent.replay import ReplayProvider, memory_stats_dict, scenario_phases, scenario_ramp
from vramscope.agent.stats import TorchCudaProvider

CLIENT = r"""
import sys, time
from vramscope.sources.agents import AgentClient
from vramscope.core.samples import Frame
c = AgentClient()
while True:
    c(Frame(time=time.time())); time.sleep(1.0)
"""


def mlp(width: int = 512):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                               torch.nn.ReLU(), torch.nn.Linear(width, 10))


def _device_and_provider():
    if torch.cuda.is_available():
        return torch.device("cuda:0"), None, "CUDA (torch.cuda.memory_stats, no sync)"
    return (torch.device("cpu"), "replay",
            "CPU with the allocator replayed (scenario_ramp): every reading path runs")


def _measured_steps(agent) -> tuple[int, int]:
    """(steps with an after-step allocated reading on some device, steps)."""
    agent._drain()
    steps = [i for i in (json.loads(b) for b in agent.ring.all_items()) if i["kind"] == "step"]
    measured = sum(1 for s in steps
                   if any(f.get("allocated_after") is not None for f in (s.get("devices") or {}).values()))
    return measured, len(steps)


def run_block(model, opt, x, y, steps):
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if x.is_cuda:
            torch.cuda.synchronize()  # the bench's own timing; the agent never synchronises
        times.append(time.perf_counter() - t0)
    return times


def overhead(blocks: int, steps: int, client: bool) -> None:
    torch.set_num_threads(1)
    rundir = tempfile.mkdtemp(prefix="vs-bench-")
    os.environ["VRAMSCOPE_RUNTIME_DIR"] = rundir
    proc = None
    if client:
        proc = subprocess.Popen([sys.executable, "-c", CLIENT], env=dict(os.environ))
    device, provider_kind, where = _device_and_provider()
    width, batch = (8192, 4096) if device.type == "cuda" else (512, 64)  # steps of ~ms on a GPU
    model = mlp(width).to(device)
    opt = torch.optim.Adam(model.parameters())
    x, y = torch.randn(batch, 256, device=device), torch.randint(0, 10, (batch,), device=device)
    run_block(model, opt, x, y, 50)  # warm up
    off, on = [], []
    samples = measured = counted = 0
    try:
        for b in range(blocks):
            if b % 2 == 0:
                off += run_block(model, opt, x, y, steps)
            else:
                provider = ReplayProvider(scenario_ramp(steps=50), loop=True) if provider_kind else None
                agent = Agent(interval=DEFAULT_INTERVAL, provider=provider, runtime_dir=rundir,
                              discover=False, final_dump=False)
                agent.watch(model=model, optimizer=opt)
                agent.start()
                agent.wait_started(5)
                run_block(model, opt, x, y, 5)
                on += run_block(model, opt, x, y, steps)
                samples += agent.samples
                agent.stop()
                m, n = _measured_steps(agent)
                measured, counted = measured + m, counted + n
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(rundir, ignore_errors=True)
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"[step time] {where}; {len(off)} steps without, {len(on)} with the agent "
          f"(interval {DEFAULT_INTERVAL} s, client pulling at 1 Hz: {client}, agent samples taken: {samples})")
    print(f"  steps measured: {measured} of {counted} carry their after-step allocated reading "
          f"({100.0 * measured / max(1, counted):.1f} %, target 100 %)")
    print(f"  median without {m_off * 1e6:.0f} us, with {m_on * 1e6:.0f} us, ratio {m_on / m_off:.4f}"
          f"  (budget <= 1.01)")
    print(f"  mean   without {statistics.fmean(off) * 1e6:.0f} us, with {statistics.fmean(on) * 1e6:.0f} us, "
          f"ratio {statistics.fmean(on) / statistics.fmean(off):.4f}")


def sample_cost(n: int, devices: int) -> None:
    frames = scenario_ramp(steps=50)
    if devices > 1:
        frames = [{d: f[0] for d in range(devices)} for f in frames]
    agent = Agent(provider=ReplayProvider(frames, loop=True), runtime_dir=tempfile.gettempdir(),
                  discover=False, final_dump=False)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    opt.zero_grad()
    model(torch.randn(4, 256)).sum().backward()
    opt.step()
    agent.watch(model=model, optimizer=opt)
    agent._walk()
    for _ in range(200):
        agent.sample_once()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        agent.sample_once()
        times.append(time.perf_counter() - t0)
    times.sort()
    print(f"[one sample] {devices} device(s) + cpu, replay provider, stats + buckets + JSON + ring: "
          f"median {statistics.median(times) * 1e6:.0f} us, p95 {times[int(0.95 * n)] * 1e6:.0f} us "
          f"(budget <= 200 us); item {len(agent.ring.all_items()[-1])} bytes; walk of the MLP "
          f"{agent.last_walk_seconds * 1e6:.0f} us, bytes summed per sample {agent.last_measure_seconds * 1e6:.0f} us")


def memory() -> None:
    frames = [{0: memory_stats_dict(1 << 30, 2 << 30)}]
    agent = Agent(provider=ReplayProvider(frames, loop=True), runtime_dir=tempfile.gettempdir(),
                  discover=False, final_dump=False)
    caps = agent.ring.caps
    tracemalloc.start()
    sizes = []
    for rounds in (1, 10):
        for _ in range(caps["sample"] * (rounds if rounds == 1 else 9)):
            agent.sample_once()
        for i in range(caps["step"] * (rounds if rounds == 1 else 9)):
            agent.steps.records.append((i, time.time(), 0.01, "optimizer", None, None))
        agent._drain()
        cur, _peak = tracemalloc.get_traced_memory()
        sizes.append((len(agent.ring), agent.ring.nbytes, cur))
    tracemalloc.stop()
    for (items, nbytes, traced), label in zip(sizes, ("1x capacity", "10x capacity")):
        print(f"[memory] after {label}: {items} items held, {nbytes / 1e6:.2f} MB encoded, "
              f"{traced / 1e6:.2f} MB traced by tracemalloc")


def phase_cost(n: int) -> None:
    """Per step: forward end (reading + output hook), backward end, optimizer pre/post, take."""
    w = torch.zeros(4, requires_grad=True)
    for label, provider in (("1 CUDA device (replayed)", "replay"), ("CPU only (no CUDA device)", "cpu")):
        if provider == "replay":
            frames, phases = scenario_phases(steps=1)
            provider = ReplayProvider(frames, phase_frames=phases * 10, loop=True)
        else:
            provider = TorchCudaProvider()
        agent = Agent(provider=provider, runtime_dir=tempfile.gettempdir(), discover=False,
                      final_dump=False)
        ph = agent.phases
        ph.budget = 1.0  # measure every step: the cost of a measured step
        ph.mark_loaded(0)
        outs = [w * 2 for _ in range(n)]  # the model outputs, made outside the timing
        times = []
        for out in outs:
            t0 = time.perf_counter()
            ph.forward_end(out)
            ph._backward_end()
            ph.optimizer_pre()
            ph.optimizer_post()
            ph.take()
            times.append(time.perf_counter() - t0)
        times.sort()
        print(f"[phases] {label}: training-thread work per step median {statistics.median(times) * 1e6:.1f} us, "
              f"p95 {times[int(0.95 * n)] * 1e6:.1f} us ({ph.reads} readings)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--no-client", action="store_true")
    ap.add_argument("--samples", type=int, default=3000)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    sample_cost(args.samples, 1)
    sample_cost(args.samples // 3, 8)
    memory()
    phase_cost(2000)
    overhead(args.blocks, args.steps, not args.no_client)


if __name__ == "__main__":
    main()
