"""Agent overhead: step time with and without the agent, where it goes, one sample's cost, memory.

    .venv/bin/python bench/agent_overhead.py [--runs 3] [--blocks 16] [--steps 300] [--no-client]
        [--pairs 300] [--models mlp,many] [--only overhead|toggle|breakdown|parts]

1. Step time (budget: ratio <= 1.01). Two models: "mlp" (256-512-512-10, batch
   64, Adam) and "many" (200 Linear(32, 32) layers, batch 16, SGD: 400
   parameters, where per-parameter work would show). Trained on CUDA where
   there is one, else on the CPU with the allocator replayed (so every
   reading path runs). Blocks of steps alternate without / with the agent (a
   fresh agent per "with" block, default interval, model and optimizer
   registered, a monitor client in another process pulling every second),
   so drift on a shared machine hits both sides alike. Per step, the wall
   time and the training thread's CPU time (time.thread_time: what other
   processes on a busy machine take does not count). Figures per run: the
   median ratio (all steps with / all steps without) and the spread of the
   per-pair ratios (adjacent blocks), for both clocks; the share of steps
   that carry their after-step allocated reading (target 100 %: the leak
   rule reads every step); who took the samples; how often the gradient
   ledger was noted after a step (every k-th step, RESYNC_BUDGET).
2. Hooks on / off (toggle): one agent running throughout; its hooks are
   installed and removed every 20 steps (300 pairs), so drift cancels
   finely; the same with four no-op hooks in the same places, which is what
   PyTorch itself charges for calling hooks. Paired ratio: mean +- 2 standard
   errors (the agent thread's own cost is in both halves here, in 1. only).
3. Where the time goes (breakdown): the training thread's time in each agent
   hook per step (median of the in-loop calls, cold caches included, times
   the calls per step), with the phase readings and gradient noting on every
   step and with both off. What PyTorch itself charges for calling hooks
   (a model's forward hooks, the optimizer's step hooks) and what they evict
   from the caches is not in these figures but is in the step time.
4. One sample -- allocator statistics through the replay provider, buckets,
   JSON serialisation, ring push -- timed many times (budget <= 200 us).
5. Memory: the ring after 10x its capacity of samples and steps (bounded).
6. Phases: the training-thread work per measured step of the phase hooks,
   with the replay provider (1 device) and on a CPU-only run.
"""

from __future__ import annotations

import argparse
import functools
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
from vramscope.sources.demo.allocator_replay import (
    ReplayProvider,
    memory_stats_dict,
    scenario_phases,
    scenario_ramp,
)
from vramscope.agent.allocator.stats_cuda import TorchCudaProvider

CLIENT = r"""
import sys, time
from vramscope.sources.agents.agent_client import AgentClient
from vramscope.core.samples import Frame
c = AgentClient()
while True:
    c(Frame(time=time.time())); time.sleep(1.0)
"""


def mlp(width: int = 512):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(256, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, 10),
    )


def many(layers: int = 200, width: int = 32):
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods)


def _device_and_provider():
    if torch.cuda.is_available():
        return torch.device("cuda:0"), None, "CUDA (torch.cuda.memory_stats, no sync)"
    return (
        torch.device("cpu"),
        "replay",
        "CPU with the allocator replayed (scenario_ramp): every reading path runs",
    )


def setup(name: str, device):
    """(model, optimizer, x, y, loss function) of one bench model."""
    if name == "mlp":
        width, batch = (8192, 4096) if device.type == "cuda" else (512, 64)  # steps of ~ms on a GPU
        model = mlp(width).to(device)
        x = torch.randn(batch, 256, device=device)
        y = torch.randint(0, 10, (batch,), device=device)
        return model, torch.optim.Adam(model.parameters()), x, y, torch.nn.functional.cross_entropy
    width, batch = (1024, 256) if device.type == "cuda" else (32, 16)
    model = many(200, width).to(device)
    x = torch.randn(batch, width, device=device)
    return model, torch.optim.SGD(model.parameters(), lr=1e-4), x, x, torch.nn.functional.mse_loss


def run_block(model, opt, x, y, steps, loss_fn=torch.nn.functional.cross_entropy):
    """[(wall seconds, training-thread CPU seconds)] per step."""
    times = []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.thread_time()
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if x.is_cuda:
            torch.cuda.synchronize()  # the bench's own timing; the agent never synchronises
        times.append((time.perf_counter() - t0, time.thread_time() - c0))
    return times


def _make_agent(provider_kind, rundir, model, opt) -> Agent:
    provider = ReplayProvider(scenario_ramp(steps=50), loop=True) if provider_kind else None
    agent = Agent(
        interval=DEFAULT_INTERVAL, provider=provider, runtime_dir=rundir, discover=False, final_dump=False
    )
    agent.watch(model=model, optimizer=opt)
    return agent


def _items(agent, kind: str) -> list[dict]:
    agent.serving.drain()
    return [i for i in (json.loads(b) for b in agent.ring.all_items()) if i["kind"] == kind]


def _spread(ratios: list[float]) -> str:
    r = sorted(ratios)
    q = lambda p: r[round(p * (len(r) - 1))]  # noqa: E731
    return f"pairs median {q(0.5):.4f}, IQR {q(0.25):.4f}-{q(0.75):.4f}"


def overhead(name: str, blocks: int, steps: int, client: bool) -> dict:
    torch.set_num_threads(1)
    rundir = tempfile.mkdtemp(prefix="vs-bench-")
    os.environ["VRAMSCOPE_RUNTIME_DIR"] = rundir
    proc = subprocess.Popen([sys.executable, "-c", CLIENT], env=dict(os.environ)) if client else None
    device, provider_kind, where = _device_and_provider()
    model, opt, x, y, loss_fn = setup(name, device)
    run_block(model, opt, x, y, 50, loss_fn)  # warm up
    off, on, pairs = [], [], {"wall": [], "cpu": []}
    measured = counted = samples = by_training = 0
    resync_every = []
    try:
        for b in range(blocks):
            if b % 2 == 0:
                block_off = run_block(model, opt, x, y, steps, loss_fn)
                off += block_off
                continue
            agent = _make_agent(provider_kind, rundir, model, opt)
            agent.start()
            agent.wait_started(5)
            run_block(model, opt, x, y, 5, loss_fn)
            block_on = run_block(model, opt, x, y, steps, loss_fn)
            on += block_on
            samples += agent.samples
            by_training += agent.handoff.served
            resync_every.append(agent.ledger.every)
            agent.stop()
            for k, clock in (("wall", 0), ("cpu", 1)):
                pairs[k].append(
                    statistics.median(t[clock] for t in block_on)
                    / statistics.median(t[clock] for t in block_off)
                )
            steps_seen = _items(agent, "step")
            counted += len(steps_seen)
            measured += sum(
                1
                for s in steps_seen
                if any(f.get("allocated_after") is not None for f in (s.get("devices") or {}).values())
            )
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(rundir, ignore_errors=True)
    params = sum(1 for _ in model.parameters())
    print(
        f"[step time] model {name} ({params} parameter tensors), {where}; {len(off)} steps without, "
        f"{len(on)} with the agent (interval {DEFAULT_INTERVAL} s, client pulling at 1 Hz: {client})"
    )
    print(
        f"  steps measured: {measured} of {counted} carry their after-step allocated reading "
        f"({100.0 * measured / max(1, counted):.1f} %, target 100 %); samples {samples}, "
        f"{by_training} of them taken by the training thread at a hook; gradients noted after "
        f"every {statistics.median(resync_every) if resync_every else '-'}-th step"
    )
    out = {}
    for k, clock, label in (("wall", 0, "wall time"), ("cpu", 1, "training-thread CPU time")):
        m_off = statistics.median(t[clock] for t in off)
        m_on = statistics.median(t[clock] for t in on)
        out[k] = m_on / m_off
        print(
            f"  {label}: median without {m_off * 1e6:.0f} us, with {m_on * 1e6:.0f} us, ratio "
            f"{m_on / m_off:.4f} (budget <= 1.01); {_spread(pairs[k])}"
        )
    return out


def toggle(name: str, pairs: int, steps: int) -> None:
    """Per-step cost of the agent's hooks (and of no-op hooks) by fine interleaving."""
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    torch.set_num_threads(1)
    device, provider_kind, _where = _device_and_provider()
    rundir = tempfile.mkdtemp(prefix="vs-bench-")
    for kind in ("agent", "no-op hooks"):
        model, opt, x, y, loss_fn = setup(name, device)  # fresh, as in every run of overhead()
        agent = _make_agent(provider_kind, rundir, model, opt)
        agent.start()
        agent.wait_started(5)
        noop: list = []

        def hooks_on():
            if kind == "agent":
                agent.steps.install()
                agent.model_hooks.attach(model)
            else:
                noop.extend(
                    [
                        model.register_forward_pre_hook(lambda m, a: None),
                        model.register_forward_hook(lambda m, a, o: None),
                        register_optimizer_step_pre_hook(lambda o, a, k: None),
                        register_optimizer_step_post_hook(lambda o, a, k: None),
                    ]
                )

        def hooks_off():
            agent.steps.uninstall()
            agent.model_hooks.detach_all()
            while noop:
                noop.pop().remove()

        ratios, on_all, off_all = [], [], []
        try:
            hooks_off()
            run_block(model, opt, x, y, 50, loss_fn)
            for i in range(pairs):
                res = {}
                for state in (True, False) if i % 2 == 0 else (False, True):
                    hooks_on() if state else hooks_off()
                    run_block(model, opt, x, y, 2, loss_fn)
                    res[state] = [c for _w, c in run_block(model, opt, x, y, steps, loss_fn)]
                hooks_off()
                on_all += res[True]
                off_all += res[False]
                ratios.append(statistics.median(res[True]) / statistics.median(res[False]) - 1)
        finally:
            hooks_off()
            agent.stop()
        mean = statistics.fmean(ratios)
        err = 2 * statistics.stdev(ratios) / len(ratios) ** 0.5
        m_on, m_off = statistics.median(on_all), statistics.median(off_all)
        print(
            f"[toggle] model {name}, {kind}: training-thread CPU time +{(m_on - m_off) * 1e6:.1f} us "
            f"of {m_off * 1e6:.0f} us per step; paired ratio {1 + mean:.4f} +- {err:.4f} "
            f"({pairs} pairs of {steps}-step blocks)"
        )
    shutil.rmtree(rundir, ignore_errors=True)


def breakdown(name: str, steps: int) -> None:
    """The training thread's time in each agent hook per step (in-loop medians)."""
    torch.set_num_threads(1)
    device, provider_kind, _where = _device_and_provider()
    model, opt, x, y, loss_fn = setup(name, device)
    run_block(model, opt, x, y, 50, loss_fn)
    for label, budget in (
        ("phase readings and gradient noting on every step", 1.0),
        ("both off (what every step pays)", 1e-12),
    ):
        agent = _make_agent(provider_kind, tempfile.gettempdir(), model, opt)
        agent.phases.budget = agent.ledger.budget = budget
        spent: dict[str, list[int]] = {}

        def timed(obj, attr, key):
            fn = getattr(obj, attr)

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                t0 = time.perf_counter_ns()
                try:
                    return fn(*args, **kwargs)
                finally:
                    spent.setdefault(key, []).append(time.perf_counter_ns() - t0)

            setattr(obj, attr, wrapper)

        hooks = agent.model_hooks
        hooks.detach_all()
        timed(hooks, "_pre_hook", "model forward pre-hook")
        timed(hooks, "_post_hook", "model forward post-hook")
        hooks.attach(model)
        timed(agent.steps, "_optimizer_pre_hook", "optimizer step pre-hook")
        timed(agent.steps, "_optimizer_hook", "optimizer step post-hook")
        agent.steps.install()
        t = run_block(model, opt, x, y, steps, loss_fn)
        agent.steps.uninstall()
        hooks.detach_all()
        step = statistics.median(w for w, _c in t)
        per_step = {k: statistics.median(v) * len(v) / steps / 1e3 for k, v in spent.items()}  # us
        total = sum(per_step.values())
        parts = ", ".join(f"{k} {v:.1f}" for k, v in per_step.items())
        print(
            f"[breakdown] model {name}, {label}: {parts} us; together {total:.1f} us of a "
            f"{step * 1e6:.0f} us step ({100 * total / 1e6 / step:.2f} %); phases every "
            f"{agent.phases.every}, gradients noted every {agent.ledger.every}"
        )


def sample_cost(n: int, devices: int) -> None:
    """One sample, as the agent thread takes it (the ledger's gradients) and as the
    training thread takes it at a hook when asked (reading .grad and noting it)."""
    frames = scenario_ramp(steps=50)
    if devices > 1:
        frames = [{d: f[0] for d in range(devices)} for f in frames]
    agent = Agent(
        provider=ReplayProvider(frames, loop=True),
        runtime_dir=tempfile.gettempdir(),
        discover=False,
        final_dump=False,
    )
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    opt.zero_grad()
    model(torch.randn(4, 256)).sum().backward()
    opt.step()
    agent.watch(model=model, optimizer=opt)
    agent.registry.walk()
    out = []
    for where, take in (
        ("agent thread", lambda: agent.measurer.sample(read_grads=False, drain=True)),
        ("training thread", agent.sample_once),
    ):
        for _ in range(200):
            take()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            take()
            times.append(time.perf_counter() - t0)
        times.sort()
        out.append(
            f"{where}: median {statistics.median(times) * 1e6:.0f} us, p95 {times[int(0.95 * n)] * 1e6:.0f} us"
        )
    print(
        f"[one sample] {devices} device(s) + cpu, replay provider, stats + buckets + JSON + ring "
        f"(budget <= 200 us): {'; '.join(out)}; item {len(agent.ring.all_items()[-1])} bytes; walk of the "
        f"MLP {agent.registry.last_walk_seconds * 1e6:.0f} us, bytes summed per sample {agent.instant.last_measure_seconds * 1e6:.0f} us"
    )


def memory() -> None:
    frames = [{0: memory_stats_dict(1 << 30, 2 << 30)}]
    agent = Agent(
        provider=ReplayProvider(frames, loop=True),
        runtime_dir=tempfile.gettempdir(),
        discover=False,
        final_dump=False,
    )
    caps = agent.ring.caps
    tracemalloc.start()
    sizes = []
    for rounds in (1, 10):
        for _ in range(caps["sample"] * (rounds if rounds == 1 else 9)):
            agent.sample_once()
        for i in range(caps["step"] * (rounds if rounds == 1 else 9)):
            agent.steps.records.append((i, time.time(), 0.01, "optimizer", None, None, time.monotonic()))
        agent.serving.drain()
        cur, _peak = tracemalloc.get_traced_memory()
        sizes.append((len(agent.ring), agent.ring.nbytes, cur))
    tracemalloc.stop()
    for (items, nbytes, traced), label in zip(sizes, ("1x capacity", "10x capacity")):
        print(
            f"[memory] after {label}: {items} items held, {nbytes / 1e6:.2f} MB encoded, "
            f"{traced / 1e6:.2f} MB traced by tracemalloc"
        )


def phase_cost(n: int) -> None:
    """Per measured step: forward end, end of backward, optimizer pre/post, take."""
    w = torch.zeros(4, requires_grad=True)
    for label, provider in (("1 CUDA device (replayed)", "replay"), ("CPU only (no CUDA device)", "cpu")):
        if provider == "replay":
            frames, phases = scenario_phases(steps=1)
            provider = ReplayProvider(frames, phase_frames=phases * 10, loop=True)
        else:
            provider = TorchCudaProvider()
        agent = Agent(provider=provider, runtime_dir=tempfile.gettempdir(), discover=False, final_dump=False)
        ph = agent.phases
        ph.budget = 1.0  # measure every step: the cost of a measured step
        ph.mark_loaded(0)
        ph.optimizer_seen = True  # as from the second step of a loop with an optimizer
        outs = [w * 2 for _ in range(n)]  # the model outputs, made outside the timing
        times = []
        for out in outs:
            t0 = time.perf_counter()
            ph.forward_end(out)
            ph.optimizer_pre()
            ph.optimizer_post()
            ph.take(time.monotonic(), 0.01)
            times.append(time.perf_counter() - t0)
        times.sort()
        print(
            f"[phases] {label}: training-thread work per step median {statistics.median(times) * 1e6:.1f} us, "
            f"p95 {times[int(0.95 * n)] * 1e6:.1f} us ({ph.reads} readings)"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--models", default="mlp,many")
    ap.add_argument("--no-client", action="store_true")
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--only", choices=("overhead", "toggle", "breakdown", "parts"))
    args = ap.parse_args()
    torch.set_flush_denormal(True)  # thousands of steps on one batch: no denormal slowdown late in a run
    print(
        f"torch {torch.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    models = [m for m in args.models.split(",") if m]
    if args.only in (None, "parts"):
        sample_cost(args.samples, 1)
        sample_cost(args.samples // 3, 8)
        memory()
        phase_cost(2000)
    if args.only in (None, "toggle"):
        for name in models:
            toggle(
                name, args.pairs if name == "mlp" else max(10, args.pairs // 3), 20 if name == "mlp" else 10
            )
    if args.only in (None, "breakdown"):
        for name in models:
            breakdown(name, 2000 if name == "mlp" else 500)
    if args.only in (None, "overhead"):
        results: dict[str, list[dict]] = {}
        for run in range(args.runs):
            for name in models:
                steps = args.steps if name == "mlp" else max(20, args.steps // 4)
                results.setdefault(name, []).append(overhead(name, args.blocks, steps, not args.no_client))
        if args.runs > 1:
            for name, runs in results.items():
                for k in ("wall", "cpu"):
                    print(f"[runs] model {name}, {k}: ratios " + ", ".join(f"{r[k]:.4f}" for r in runs))


if __name__ == "__main__":
    main()
