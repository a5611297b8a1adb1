"""The agent thread never reads ``.grad``, and its samples are still true.

Reading ``p.grad`` from a second thread can crash PyTorch while the training
thread runs ``zero_grad`` (tests/agent/grad_race.py), so the agent thread
shows the gradient storages the training thread noted in a ledger, asks the
training thread to take the sample at its next hook while a backward may be
making gradients, and says "not known" when no hook comes. The allocator is
replayed with CUDA semantics (tests/agent/live_bytes.py) over real CPU loops.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time

import pytest
import torch

import vramscope
from vramscope.agent.tensors.buckets import GRADIENTS_UNKNOWN

from tests.agent.live_bytes import LiveBytes, LiveBytesProvider, agent_thread_sample
from tests.agent.tensors.test_instant_buckets import mlp_bn, truth

AGENT_THREAD = "vramscope-agent"
APP_DIR = os.path.dirname(os.path.dirname(os.path.abspath(vramscope.__file__)))


@pytest.fixture
def grad_reads(monkeypatch):
    """Counts ``.grad`` reads per thread name (autograd's own writes are C++ and not counted)."""
    base = torch._C.TensorBase.grad
    reads: collections.Counter = collections.Counter()

    def get(self):
        reads[threading.current_thread().name] += 1
        return base.__get__(self)

    monkeypatch.setattr(torch.Tensor, "grad", property(get, base.__set__, base.__delete__), raising=False)
    return reads


def cpu_buckets(item: dict) -> dict:
    return {d["device"]: d for d in item["devices"]}["cpu"]


def samples(agent) -> list[dict]:
    agent.serving.drain()
    return [i for i in (json.loads(b) for b in agent.ring.all_items()) if i["kind"] == "sample"]


def sample_between_statements(agent, timeout: float = 5.0) -> dict | None:
    """A sample made due on another thread, waited for while this (main) thread runs
    statements -- where the agent's pending call notes the gradients."""
    t0 = time.time()
    threading.Thread(target=agent.measurer.turn, args=(time.monotonic(),)).start()
    deadline = time.monotonic() + timeout
    item = None
    while item is None and time.monotonic() < deadline:
        time.sleep(0.005)
        item = next((s for s in samples(agent) if s["t"] > t0), None)
    return item


def within(got: dict, want: dict) -> bool:
    return all(got[b] is not None and abs(got[b] - v) <= 0.01 * v for b, v in want.items())


@pytest.mark.slow
def test_the_agent_thread_never_reads_grad_and_its_samples_are_true(make_agent, grad_reads):
    live = LiveBytes()
    pause = 0.02
    with live:
        model = mlp_bn()
        opt = torch.optim.Adam(model.parameters())
        agent = make_agent(LiveBytesProvider(live), interval=0.05)
        agent.watch(model=model, optimizer=opt)
        marks = []  # (wall time, gradients from then until the next mark)
        agent.start()
        for _ in range(6):
            opt.zero_grad(set_to_none=True)
            marks.append((time.time(), 0))
            time.sleep(pause)
            loss = model(torch.randn(32, 64)).square().mean()
            time.sleep(pause)
            loss.backward()
            del loss
            marks.append((time.time(), truth(live, [model], [opt])["gradients"]))
            time.sleep(pause)
            opt.step()
            time.sleep(pause)
        taken = samples(agent)
        agent.stop()
    assert grad_reads[AGENT_THREAD] == 0
    assert grad_reads[threading.main_thread().name] > 0
    by_agent = [s for s in taken if s["agent"]["taken_by"] == "agent thread"]
    by_training = [s for s in taken if s["agent"]["taken_by"] == "training thread"]
    assert by_agent and by_training  # the agent thread sampled, and handed samples to the training thread
    # gradients change only in zero_grad and in backward, and the agent thread never samples while
    # a backward may run: each of its samples shows the gradients alive since the mark before it
    # (or, taken while zero_grad frees them just before a mark, some of them)
    for s in by_agent[1:]:
        g = cpu_buckets(s)["buckets"]["gradients"]
        before = [w for t, w in marks if t <= s["t"]]
        after = [(t, w) for t, w in marks if t > s["t"]]
        want = before[-1] if before else 0
        if after and after[0][0] - s["t"] < 0.002:
            assert min(want, after[0][1]) <= g <= max(want, after[0][1]), (s["t"], g, want, after[0])
        else:
            assert g == want, (s["t"], cpu_buckets(s), want)


def test_a_sample_handed_to_the_training_thread_is_true_at_that_hook(make_agent):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        agent = make_agent(LiveBytesProvider(live), interval=60.0)
        agent.watch(model=model, optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        seen = []
        opt.register_step_pre_hook(lambda *a: seen.append(truth(live, [model], [opt])))
        for _ in range(3):
            opt.zero_grad()
            loss = model(torch.randn(32, 64)).square().mean()
            agent.handoff.main_thread_trains = False  # as when training runs off the main thread
            agent.handoff.ask(time.monotonic() + 60)  # as the agent thread does while a backward may run
            loss.backward()
            del loss
            opt.step()  # the step's pre-hook takes it: after backward, before the update
        handed = [s for s in samples(agent) if s["agent"]["taken_by"] == "training thread"]
    assert len(handed) == 3 and agent.handoff.served == 3
    for s, want in zip(handed, seen):
        assert within(cpu_buckets(s)["buckets"], want), (cpu_buckets(s), want)
        assert want["gradients"] == sum(p.numel() * 4 for p in model.parameters())


def test_after_training_the_main_thread_notes_the_gradients_between_two_statements(make_agent):
    """The last steps' gradients were not noted (their cost budget skipped them) and no hook
    comes any more: the main thread notes them at its next statement, and the agent
    thread's own sample is then true."""
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.Adam(model.parameters())
        agent = make_agent(LiveBytesProvider(live), interval=60.0)
        agent.ledger.budget = 1e-12  # noting after a step: only until its cost is known
        agent.watch(model=model, optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        for _ in range(6):
            opt.zero_grad()
            model(torch.randn(32, 64)).square().mean().backward()
            opt.step()
        assert agent.ledger.stale and agent.handoff.main_thread_trains and agent.ledger.resyncs < 6
        item = sample_between_statements(agent)
        want = truth(live, [model], [opt])
    assert item is not None and item["agent"]["taken_by"] == "agent thread"
    assert not agent.ledger.stale and agent.handoff.served == 0
    assert within(cpu_buckets(item)["buckets"], want), (cpu_buckets(item), want)
    assert want["gradients"] == sum(p.numel() * 4 for p in model.parameters())


def test_a_model_met_after_the_last_step_has_its_gradients_noted_between_two_statements(make_agent):
    """A head summed into the known model's loss, which the agent meets at the loop's last
    forward (as discovery meets a model) and first walks after the last step boundary:
    its backward is then watched from the main thread's next statement, as no step
    boundary comes any more, and the agent thread's sample counts both models'
    gradients -- not n/a for as long as the script waits (CI, the late-head child)."""
    live = LiveBytes()
    with live:
        model, head = mlp_bn(), mlp_bn(96)
        opt = torch.optim.Adam(model.parameters())
        agent = make_agent(LiveBytesProvider(live), interval=60.0)  # no sample while it trains
        agent.watch(model=model, optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        for _ in range(8):
            opt.zero_grad()
            head.zero_grad()
            x = torch.randn(32, 64)
            (model(x).square().mean() + head(x).square().mean()).backward()
            opt.step()
        agent.watch_models([head])  # met as discovery meets a model: walked at the next sample
        item = sample_between_statements(agent)
        want = truth(live, [model, head], [opt])
    assert item is not None
    assert want["gradients"] == sum(p.numel() * 4 for m in (model, head) for p in m.parameters())
    assert within(cpu_buckets(item)["buckets"], want), (cpu_buckets(item), want)


def test_a_statement_inside_a_backward_hooks_no_node_of_a_model_met_late(make_agent):
    """The main thread's pending call can run inside a backward (a Python hook the engine
    calls): the new layout's nodes are hooked only after it, at the step boundary -- never
    while the engine goes through their hooks."""
    live = LiveBytes()
    with live:
        model, head = mlp_bn(), mlp_bn(96)
        opt = torch.optim.Adam(model.parameters())
        agent = make_agent(LiveBytesProvider(live), interval=60.0)
        agent.watch(model=model, optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        for _ in range(4):
            opt.zero_grad()
            model(torch.randn(32, 64)).square().mean().backward()
            opt.step()
        agent.watch_models([head])
        agent.registry.walk()  # (the agent thread's walk: the head found, its nodes not hooked)
        new = agent.registry.owners.key
        inside = []

        def statement(grad):  # as the pending call between two statements of this hook
            agent.registry.note_between_statements()
            inside.append(agent.backward.covered)

        opt.zero_grad()
        x = torch.randn(32, 64)
        out = head(x)
        out.register_hook(statement)
        (model(x).square().mean() + out.square().mean()).backward()
        opt.step()
        for _ in range(20):  # (a quiet step leaves the work to the next full one)
            if agent.backward.covered == new:
                break
            opt.zero_grad()
            (model(x).square().mean() + head(x).square().mean()).backward()
            opt.step()
    assert inside and inside[0] != new  # not hooked inside the backward
    assert agent.backward.covered == new  # hooked at a step boundary
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.Adam(model.parameters())
        agent = make_agent(LiveBytesProvider(live), interval=0.05)
        agent.measurer.handoff_wait = 0.1
        agent.watch(model=model, optimizer=opt)
        agent.start()
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(32, 64)).square().mean().backward()
            opt.step()
        loss = model(torch.randn(32, 64)).square().mean()  # its backward would make gradients...
        t0 = time.time()
        time.sleep(0.6)  # ...and the training thread is inside one C call for a while: no hook, no statement
        want = truth(live, [model], [opt])
        item = next(s for s in samples(agent) if s["t"] > t0 and s["agent"]["taken_by"] == "agent thread")
        loss.backward()
    cpu = cpu_buckets(item)
    assert cpu["buckets"]["gradients"] is None and cpu["buckets"]["other_allocated"] is None
    assert cpu["buckets_note"] == GRADIENTS_UNKNOWN
    assert cpu["buckets"]["weights"] == want["weights"]
    assert cpu["buckets"]["optimizer_state"] == want["optimizer_state"]


@pytest.mark.parametrize("zero_grad_at_the_end", [True, False])
def test_after_the_last_step_the_agent_thread_shows_the_gradients_alive(make_agent, zero_grad_at_the_end):
    live = LiveBytes()
    with live:
        model = mlp_bn()
        opt = torch.optim.AdamW(model.parameters())
        agent = make_agent(LiveBytesProvider(live), interval=0.05)
        agent.watch(model=model, optimizer=opt)
        agent.start()
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(32, 64)).square().mean().backward()
            opt.step()
        if zero_grad_at_the_end:
            opt.zero_grad(set_to_none=True)  # frees the gradients past the last step
        item = agent_thread_sample(agent)
        want = truth(live, [model], [opt])
    params = sum(p.numel() * 4 for p in model.parameters())
    assert want["gradients"] == (0 if zero_grad_at_the_end else params)
    assert within(cpu_buckets(item)["buckets"], want), (cpu_buckets(item), want)


@pytest.mark.slow
def test_zero_grad_under_the_agent_at_its_fastest_interval_never_crashes_the_training():
    """grad_race.py: a bare thread reading p.grad dies within seconds on this loop (and so
    did the agent while it read .grad between backward passes); the agent must not."""
    script = os.path.join(os.path.dirname(os.path.dirname(__file__)), "grad_race.py")
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(p for p in (APP_DIR, os.environ.get("PYTHONPATH")) if p)
    )
    done = subprocess.run(
        [sys.executable, script, "agent", "4"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "errors 0" in done.stdout
