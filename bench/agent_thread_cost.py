"""The agent's cost on the training thread, as CPU time, on 2 ms and 50 ms steps (issue 23).

    .venv/bin/python bench/agent_thread_cost.py [--reps 40] [--steps 2ms:300,50ms:20] [--read-us 20]
        [--batch N]   (a fixed batch for one label: two agents side by side on PYTHONPATH)
        [--probe]     (an empty node pre-hook timed beside the watch's: the meter's own cold cost)

Budgets: the training thread's CPU time spent in the agent's functions <= 1 %
of the step's; phase readings on >= 95 % of steps when one allocator read
costs 20 us.

How. An MLP (256-W-W-10, Adam, ``torch.set_num_threads(1)``) with its batch
sized so that a step takes about 2 ms / 50 ms of the training thread's CPU
time (``time.thread_time``: what other processes and the agent's own thread
take does not count). The allocator is a replay whose hook reading
(``allocated_peaks_now``) spins ``--read-us`` of CPU time: a slow allocator
read, as one on a real GPU might be. Repetitions alternate (order flipped
every other one) a block without the agent and a block with a fresh agent
(default interval, model and optimizer registered; its first steps, while
it learns which gradient nodes to watch, are left out). Two figures:

1. in the agent's functions: every agent entry point the training thread
   runs (model forward pre/post hooks, optimizer step pre/post hooks, the
   backward watch's node pre-hook and end callback, the output-gradient
   hook and the phase end callback, the main-thread pending call) is wrapped
   at class level and timed with ``time.thread_time``; the wrapper's own cost
   (calibrated on an empty function) is subtracted. The quiet stretch's tally
   (agent/steps/stretch.py: a C callable PyTorch calls on every optimizer step, no
   Python frame to wrap) is counted at its warm cost per call. Per step: the
   sum, and its share of the median step of the same block; per hook: the
   breakdown.
2. side by side: the median step CPU time with / without, per repetition;
   median and interquartile range of those ratios over the repetitions (this
   also holds what PyTorch charges for calling hooks at all and what the
   hooks evict from the caches -- and this machine's noise).

The share of steps whose phases were read: the agent's own counters
(``phases.steps_measured`` / ``steps_seen``) over each block's measured steps.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import threading
import time

import torch

from vramscope.agent.tensors.registry import Registry
from vramscope.agent.tensors.backward import BackwardWatch
from vramscope.agent.core import DEFAULT_INTERVAL, Agent
from vramscope.agent.tensors.input_shape import InputShape
from vramscope.agent.modules.model_hooks import ModelHooks
from vramscope.agent.modules.module_sampler import ModuleSampler
from vramscope.agent.steps.phases import PhaseTracker
from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_ramp
from vramscope.agent.steps.steps import StepTracker
from vramscope.agent.patches import WRAPPED
from vramscope.agent.tensors.unseen_grads import UnseenGrads

ENTRY_POINTS = (  # (class, method): what the training thread runs of the agent
    (ModelHooks, "_pre_hook"),
    (ModelHooks, "_post_hook"),
    (StepTracker, "_optimizer_pre_hook"),
    (StepTracker, "_optimizer_hook"),
    (BackwardWatch, "_end"),  # (_start runs inside the node pre-hook, timed as such)
    (PhaseTracker, "_output_grad"),
    (PhaseTracker, "_backward_end"),
    (Registry, "note_between_statements"),
    (InputShape, "_pre"),
    (InputShape, "_post"),
    (ModuleSampler, "_after_step"),
    (ModuleSampler, "after_step"),  # (its own hook / the step tracker's call)
    # the torch.autograd.backward wrapper's walks (a learning or silent backward); the wrapper's
    # own frame on every backward (a closure: two stores, two reads) cannot be wrapped here --
    # WRAPPER below times it on a backward of an empty graph
    (UnseenGrads, "after"),
)


class SlowRead(ReplayProvider):
    """A replayed allocator whose hook reading costs ``read_us`` of CPU time."""

    def __init__(self, read_us: float):
        super().__init__(scenario_ramp(steps=50), loop=True)
        self.read_s = read_us / 1e6

    def allocated_peaks_now(self):
        if self.read_s:  # (0: the agent's own cost alone, a read as cheap as a dict)
            end = time.thread_time() + self.read_s
            while time.thread_time() < end:
                pass
        return {i: (v, v) for i, v in self.allocated_now().items()}


class Meter:
    """Training-thread CPU time in the wrapped entry points (outermost calls only)."""

    def __init__(self):
        self.spent: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.depth = 0
        self.thread = threading.get_ident()
        self.on = False
        self.overhead = 0.0  # seconds the wrapper itself adds per call

    def timed(self, key: str, fn):
        """``fn`` timed under ``key`` when called on the training thread, outermost only."""
        meter = self

        def call(*args, **kwargs):
            if not meter.on or meter.depth or threading.get_ident() != meter.thread:
                return fn(*args, **kwargs)
            meter.depth = 1
            c0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                meter.spent[key] = meter.spent.get(key, 0.0) + time.thread_time() - c0
                meter.calls[key] = meter.calls.get(key, 0) + 1
                meter.depth = 0

        return call

    def wrap(self, cls, name: str) -> None:
        fn = getattr(cls, name)
        setattr(cls, name, functools.wraps(fn)(self.timed(f"{cls.__name__}.{name}", fn)))

    def wrap_factory(self, cls, name: str) -> None:
        """``cls.name`` makes a hook (a closure): time the hooks it makes."""
        make = getattr(cls, name)
        key = f"{cls.__name__}.{name.lstrip('_').removesuffix('_for')} (hook)"
        setattr(cls, name, lambda *args, **kwargs: self.timed(key, make(*args, **kwargs)))

    def calibrate(self, n: int = 20000) -> None:
        class Empty:
            def f(self):
                return None

        self.wrap(Empty, "f")
        e = Empty()
        self.on = True
        for _ in range(n):
            e.f()
        self.on = False
        self.overhead = self.spent.pop("Empty.f") / n
        self.calls.pop("Empty.f")

    def take(self) -> tuple[float, dict[str, float]]:
        """(seconds in the agent, net of the wrapper; per entry point), then reset
        (``last_calls``: the calls per entry point)."""
        per = {k: max(0.0, v - self.overhead * self.calls[k]) for k, v in self.spent.items()}
        self.last_calls = self.calls
        self.spent, self.calls = {}, {}
        return sum(per.values()), per


TALLY = "QuietStretch tally (C, warm cost per call)"
NODE_TALLY = "BackwardWatch node tally (C, warm cost per call)"
# --probe: an empty node pre-hook beside each of the watch's, timed the same way (not counted
# as the agent's): what the meter itself reads on a cold hook that does nothing
PROBE = "empty node pre-hook (probe, not counted)"


def tally_calls(agent) -> int:
    stretch = getattr(agent.steps, "stretch", None)  # (None: an agent without quiet stretches)
    tally = stretch.tally if stretch is not None else None
    return tally.cache_info().misses if tally is not None else 0


def node_tally_calls(agent) -> int:
    """Calls of the thinned node hooks' C tally (agent/tensors/backward.py; 0: an agent without it)."""
    info = getattr(agent.backward, "tally_info", None)
    return info().misses if info is not None else 0


def tally_call_cost(n: int = 200000) -> float:
    """Seconds per call of the stretch's tally (what PyTorch calls on every optimizer step),
    net of the loop's own cost."""
    try:
        from vramscope.agent.steps.stretch import _new_tally
    except ImportError:  # (an agent from before quiet stretches, measured side by side)
        return 0.0
    tally, args, kwargs = _new_tally(), (), {}
    c0 = time.thread_time()
    for _ in range(n):
        tally(None, args, kwargs)
    loop = time.thread_time() - c0
    c0 = time.thread_time()
    for _ in range(n):
        (None, args, kwargs)
    return max(0.0, loop - (time.thread_time() - c0)) / n


TALLY_CALL_S = 0.0
WRAPPER = "backward wrapper's own frame (estimated per call)"


def wrapper_call_cost(agent, n: int = 3000) -> float:
    """Seconds the agent's torch.autograd.backward wrapper adds to a call (its closure,
    warm), net of the engine: a backward of a one-node graph through it and without it."""
    wrapper = torch.autograd.backward
    original = getattr(wrapper, "__wrapped__", None) if getattr(wrapper, WRAPPED, False) else None
    if original is None:  # (not the agent's: another agent of this process wraps it)
        return 0.0
    x = torch.ones(1, requires_grad=True)
    costs = {}
    for name, fn in (
        ("with", torch.autograd.backward),
        ("without", original),
        ("with2", torch.autograd.backward),
    ):
        total = 0.0
        for _ in range(n):
            y = x * 2.0
            c0 = time.thread_time()
            fn(y)
            total += time.thread_time() - c0
        costs[name] = total / n
    return max(0.0, min(costs["with"], costs["with2"]) - costs["without"])


def setup(batch: int, width: int = 512):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, 10),
    )
    x = torch.randn(batch, 256)
    y = torch.randint(0, 10, (batch,))
    return model, torch.optim.Adam(model.parameters()), x, y


def after_share(agent, count0: int) -> float | None:
    """Share of the block's steps (after step ``count0``) whose step item carries
    "allocated after the step" (what the leak and growth rules read)."""
    agent.serving.drain()
    items = (json.loads(b) for b in agent.ring.all_items())
    steps = [i for i in items if i.get("kind") == "step" and i["step"] > count0]
    if not steps:
        return None
    read = [
        s
        for s in steps
        if any((d or {}).get("allocated_after") is not None for d in (s["devices"] or {}).values())
    ]
    return len(read) / len(steps)


def run(model, opt, x, y, steps: int) -> list[float]:
    """Training-thread CPU seconds per step."""
    out = []
    for _ in range(steps):
        c0 = time.thread_time()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(time.thread_time() - c0)
    return out


def size_for(target_s: float) -> int:
    """A batch whose step takes about ``target_s`` of CPU time here."""
    batch = 16
    while True:
        model, opt, x, y = setup(batch)
        run(model, opt, x, y, 3)
        t = statistics.median(run(model, opt, x, y, 5))
        if t >= target_s or batch > 1 << 16:
            return max(1, int(batch * target_s / t))
        batch *= 2


def bench(
    label: str,
    target_s: float,
    reps: int,
    steps: int,
    read_us: float,
    meter: Meter,
    batch: int = 0,
    probe: bool = False,
) -> None:
    batch = batch or size_for(target_s)
    model, opt, x, y = setup(batch)
    run(model, opt, x, y, 10)
    rundir = tempfile.mkdtemp(prefix="vs-bench-")
    ratios, shares, in_agent, parts_all, afters = [], [], [], {}, []
    on_all, off_all = [], []
    calls_all: dict[str, list] = {}
    for r in range(reps):
        res = {}
        for with_agent in (False, True) if r % 2 == 0 else (True, False):
            if not with_agent:
                res[False] = run(model, opt, x, y, steps)
                continue
            agent = Agent(
                interval=DEFAULT_INTERVAL,
                provider=SlowRead(read_us),
                runtime_dir=rundir,
                discover=False,
                final_dump=False,
            )
            agent.watch(model=model, optimizer=opt)
            agent.start()
            agent.wait_started(5)
            run(model, opt, x, y, 8)  # learning which gradient nodes to watch; the budget settles
            probes = [
                node.register_prehook(meter.timed(PROBE, lambda grad_outputs: None))
                for _p, node, _h in (agent.backward._nodes.values() if probe else ())
            ]
            ph = agent.phases
            seen0, measured0 = ph.steps_seen, ph.steps_measured
            count0 = agent.steps.count
            meter.take()
            tally0 = tally_calls(agent)
            node0 = node_tally_calls(agent)
            meter.on = True
            res[True] = run(model, opt, x, y, steps)
            meter.on = False
            spent, parts = meter.take()
            for h in probes:
                h.remove()
            if PROBE in parts:  # (not the agent's: the meter's own cost on a cold node hook)
                spent -= parts[PROBE]
            # the quiet stretch's C tally (a post-hook on the optimizer, no Python frame to wrap):
            # its calls at the cost of one call measured warm
            tallied = tally_calls(agent) - tally0
            if tallied:
                parts[TALLY] = tallied * TALLY_CALL_S
                meter.last_calls[TALLY] = tallied
                spent += parts[TALLY]
            nodes = node_tally_calls(agent) - node0  # (its cost as the stretch tally's: one C call)
            if nodes:
                parts[NODE_TALLY] = nodes * TALLY_CALL_S
                meter.last_calls[NODE_TALLY] = nodes
                spent += parts[NODE_TALLY]
            parts[WRAPPER] = steps * wrapper_call_cost(agent)  # (one backward a step)
            meter.last_calls[WRAPPER] = steps
            spent += parts[WRAPPER]
            if ph.steps_seen > seen0:  # the share of this block's steps whose phases were read
                shares.append((ph.steps_measured - measured0) / (ph.steps_seen - seen0))
            agent.stop()
            afters.append(after_share(agent, count0))
            in_agent.append(spent / steps / statistics.median(res[True]))
            for k, v in parts.items():
                parts_all.setdefault(k, []).append(v / steps)
                calls_all.setdefault(k, []).append(meter.last_calls[k] / steps)
        ratios.append(statistics.median(res[True]) / statistics.median(res[False]))
        on_all += res[True]
        off_all += res[False]

    def q(values, p):
        v = sorted(values)
        return v[round(p * (len(v) - 1))]

    step = statistics.median(off_all)
    print(
        f"[{label}] batch {batch}: median step {step * 1e3:.2f} ms of training-thread CPU time "
        f"without the agent, {statistics.median(on_all) * 1e3:.2f} ms with; {reps} repetitions of "
        f"{steps} steps each side; allocator read {read_us:g} us"
    )
    print(
        f"  in the agent's functions: median {100 * statistics.median(in_agent):.3f} % of the step "
        f"(IQR {100 * q(in_agent, 0.25):.3f}-{100 * q(in_agent, 0.75):.3f} %, max "
        f"{100 * max(in_agent):.3f} %; budget <= 1 %); wrapper cost {meter.overhead * 1e6:.2f} us "
        f"per call subtracted"
    )
    parts = sorted(((statistics.median(v), k) for k, v in parts_all.items()), reverse=True)
    print(
        "  per step: "
        + ", ".join(
            f"{k} {v * 1e6:.1f} us ({statistics.median(calls_all[k]):.2f} calls)" for v, k in parts if v > 0
        )
    )
    print(
        f"  side by side, step CPU time with / without: median ratio {q(ratios, 0.5):.4f} "
        f"(IQR {q(ratios, 0.25):.4f}-{q(ratios, 0.75):.4f})"
    )
    afters = [a for a in afters if a is not None]
    if afters:
        print(
            f"  allocated after the step on {100 * statistics.median(afters):.1f} % of steps (min "
            f"{100 * min(afters):.1f} %; target >= 99 %)"
        )
    shares = [s for s in shares if s is not None]
    if shares:
        print(
            f"  phases read on {100 * statistics.median(shares):.1f} % of steps (min "
            f"{100 * min(shares):.1f} %; target >= 95 %)"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--steps", default="2ms:300,50ms:20", help="label:steps per block: 2ms, 10ms, 50ms")
    ap.add_argument("--read-us", type=float, default=20.0)
    ap.add_argument("--batch", type=int, default=0, help="a fixed batch (one label): runs side by side")
    ap.add_argument("--probe", action="store_true", help="time an empty node pre-hook too (the meter)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    print(
        f"torch {torch.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    meter = Meter()
    meter.calibrate()
    global TALLY_CALL_S
    TALLY_CALL_S = tally_call_cost()
    print(f"the quiet stretch's C tally: {TALLY_CALL_S * 1e6:.2f} us a call (warm), counted per call")
    for cls, name in ENTRY_POINTS:
        if hasattr(cls, name):
            meter.wrap(cls, name)
    meter.wrap_factory(BackwardWatch, "_hook_for")  # the node pre-hooks (closures)
    meter.wrap_factory(ModuleSampler, "_make_pre")  # the per-module sampler's forward hooks
    meter.wrap_factory(ModuleSampler, "_make_post")
    for spec in args.steps.split(","):
        label, steps = spec.split(":")
        target = {"2ms": 0.002, "10ms": 0.010, "50ms": 0.050}[label]
        bench(label + " steps", target, args.reps, int(steps), args.read_us, meter, args.batch, args.probe)


if __name__ == "__main__":
    main()
