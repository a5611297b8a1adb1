"""Quiet stretches (agent/steps/stretch.py): the steps between two budgeted ones counted by a C
tally while the agent's optimizer post-hook is out of Python -- every step still counted
once, in order, with skipped updates and gradient accumulation; the hook back for the
budgeted steps; the user's own hooks untouched."""

from __future__ import annotations

import json
import time

import torch
from torch.optim.optimizer import _global_optimizer_post_hooks, register_optimizer_step_post_hook

from vramscope.agent.tensors.buckets import UNMET_STATE
from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_ramp


def stepping_agent(make_agent, interval=60.0):
    """An agent whose phase budget allows almost nothing: long quiet stretches."""
    agent = make_agent(ReplayProvider(scenario_ramp(steps=50), loop=True), interval=interval)
    agent.phases.budget = 1e-9
    return agent


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def one_step(model, opt, micro=1, update=True):
    opt.zero_grad()
    for _ in range(micro):
        model(torch.randn(8, 16)).pow(2).mean().backward()
    if update:
        opt.step()


def step_items(agent):
    agent.serving.drain()
    return [i for i in (json.loads(b) for b in agent.ring.all_items()) if i["kind"] == "step"]


def started(agent, model, opt):
    agent.watch(model=model, optimizer=opt)
    agent.start()
    assert agent.wait_started(5)


def mid_stretch(make_agent, steps=40):
    """An agent, a model and its optimizer, ``steps`` steps trained: a stretch runs now."""
    agent = stepping_agent(make_agent)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    started(agent, model, opt)
    for _ in range(steps):
        one_step(model, opt)
    assert agent.steps.stretch.active is not None
    return agent, model, opt


def test_steps_moving_between_quiet_stretches_and_budgeted_steps_are_each_counted_once(make_agent):
    agent = stepping_agent(make_agent)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    started(agent, model, opt)
    counts = []
    for _ in range(120):
        one_step(model, opt)
        counts.append(agent.steps.count)  # exact between steps, inside a stretch too
    steps = step_items(agent)
    assert agent.steps.stretch.stretches >= 3  # (the steps did run in stretches)
    assert counts == list(range(1, 121))
    assert [s["step"] for s in steps] == list(range(1, 121))  # each once, in order
    measured = [s["step"] for s in steps if s["phases"] is not None]
    assert 2 <= len(measured) < 20  # the budgeted steps still read their phases
    times = [s["t"] for s in steps]
    assert times == sorted(times)
    assert all(s["duration"] is None or s["duration"] > 0 for s in steps)
    assert agent.errors == 0 and agent.steps.errors == 0 and agent.backward.errors == 0


def test_skipped_updates_and_accumulated_backwards_inside_stretches_keep_the_count(make_agent):
    """A GradScaler's skipped step runs backward but no optimizer step (no hook at all);
    accumulation runs several backwards per step: the count is the optimizer's steps."""
    agent = stepping_agent(make_agent)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    started(agent, model, opt)
    done = 0
    for i in range(150):
        update = i % 7 != 3  # a skipped update now and then
        one_step(model, opt, micro=1 + (i // 50) % 2 * 2, update=update)
        done += update
        assert agent.steps.count == done
    assert agent.steps.stretch.stretches >= 3
    assert [s["step"] for s in step_items(agent)] == list(range(1, done + 1))


def test_the_full_hook_comes_back_for_budgeted_steps_and_leaves_with_the_agent(make_agent):
    agent = stepping_agent(make_agent)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    started(agent, model, opt)
    key = agent.steps._hook_handle.id
    values = []
    for _ in range(80):
        one_step(model, opt)
        values.append(_global_optimizer_post_hooks[key])
    every = agent.steps.stretch.every  # (a C tally: every optimizer's steps)
    assert every in values  # out of Python for the stretches ...
    full = [v for v in values if v is not every]
    assert full and all(v == agent.steps._optimizer_hook for v in full)  # ... and back between
    measured = [s["step"] for s in step_items(agent) if s["phases"] is not None]
    assert measured and measured[-1] > 40  # budgeted steps after several stretches read phases
    agent.stop()
    assert key not in _global_optimizer_post_hooks
    assert len(opt._optimizer_step_post_hooks) == 0  # the tally left the optimizer
    one_step(model, opt)  # the optimizer steps on, without the agent


def test_the_users_own_optimizer_hooks_run_on_every_step(make_agent):
    agent = stepping_agent(make_agent)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    seen = {"pre": 0, "post": 0, "global": 0, "late": 0}

    def bump(name):
        def hook(*args):
            seen[name] += 1

        return hook

    opt.register_step_pre_hook(bump("pre"))
    opt.register_step_post_hook(bump("post"))
    handle = register_optimizer_step_post_hook(bump("global"))
    try:
        started(agent, model, opt)
        for i in range(60):
            if i == 30:  # registered while a stretch may run
                opt.register_step_post_hook(bump("late"))
            one_step(model, opt)
    finally:
        handle.remove()
    assert agent.steps.stretch.stretches >= 2
    assert seen == {"pre": 60, "post": 60, "global": 60, "late": 30}
    assert agent.steps.count == 60


def test_a_sample_asked_mid_stretch_is_taken_by_the_training_thread_at_its_end(make_agent):
    """The agent thread's ask waits for the stretch's last step (its full hook takes the
    sample there) -- within the stretch's planned length, the steps still exact."""
    agent, model, opt = mid_stretch(make_agent)
    left = agent.steps.quiet
    agent.handoff.main_thread_trains = False  # no call between statements: a hook must take it
    agent.measurer.turn(time.monotonic())  # a sample is due (the ledger is stale: asked)
    assert agent.handoff.wanted and agent.handoff.deadline > time.monotonic()
    steps = 40
    while agent.handoff.wanted and steps < 40 + left + 1:
        one_step(model, opt)
        steps += 1
    assert agent.handoff.served == 1 and not agent.handoff.wanted
    assert steps <= 40 + left + 1  # at the latest at the first step after the stretch
    agent.serving.drain()
    taken = [json.loads(b) for b in agent.ring.all_items()]
    taken = [i for i in taken if i["kind"] == "sample" and i["agent"]["taken_by"] == "training thread"]
    assert len(taken) == 1 and taken[0]["step"] == steps
    assert agent.steps.count == steps
    assert [s["step"] for s in step_items(agent)] == list(range(1, steps + 1))


def test_a_second_model_trained_after_a_stretch_is_still_seen(make_agent):
    """Model A stops mid-stretch (its backward, which would end the stretch, never comes
    again); model B and its own optimizer train next: the agent thread ends the stale
    stretch, B's optimizer steps reach the full hook and are registered."""
    agent = stepping_agent(make_agent, interval=0.05)
    a, b = mlp(0), mlp(1)
    opt_a = torch.optim.Adam(a.parameters())
    opt_b = torch.optim.SGD(b.parameters(), lr=0.01)
    started(agent, a, opt_a)
    for _ in range(40):
        one_step(a, opt_a)
    deadline = time.monotonic() + 10
    while opt_b not in agent.optimizers() and time.monotonic() < deadline:
        one_step(b, opt_b)
        time.sleep(0.005)
    assert opt_b in agent.optimizers()
    assert agent.steps.stretch.woken_by_agent >= 1 or agent.steps.stretch.active is None
    assert agent.steps.count == 40  # B's steps are not A's
    assert [s["step"] for s in step_items(agent)] == list(range(1, 41))


def test_stopping_or_stepping_by_hand_mid_stretch_records_every_step(make_agent):
    agent, model, opt = mid_stretch(make_agent)
    key = agent.steps._hook_handle.id
    agent.steps.manual_step()  # vramscope.agent.step(): the stretch's steps come first
    assert agent.steps.stretch.active is None and agent.steps.count == 41
    for _ in range(3):
        one_step(model, opt)  # (manual steps from here: the optimizer only marks boundaries)
        agent.steps.manual_step()
    assert agent.steps.count == 44
    agent.stop()  # (the ring outlives the agent: what the final dump holds)
    assert [s["step"] for s in step_items(agent)] == list(range(1, 45))
    assert key not in _global_optimizer_post_hooks


def test_the_final_dump_holds_a_stretchs_steps(make_agent, runtime_dir):
    agent, _model, _opt = mid_stretch(make_agent)
    agent._atexit()  # (what the exit handler runs: no drain on this thread before it)
    dumped = [i for i in (json.loads(b) for b in agent.ring.all_items()) if i["kind"] == "step"]
    assert [i["step"] for i in dumped] == list(range(1, 41))


def test_a_stretch_whose_optimizer_stops_stepping_ends_after_two_of_its_steps_not_at_its_planned_end(
    make_agent,
):
    """A model that stops training mid-stretch (another trains next, unseen while the
    stretch lasts) ends the stretch once the agent thread has seen its tally still for two
    of its steps' length and an interval; a stretch still stepping runs on."""
    agent, model, opt = mid_stretch(make_agent, steps=200)
    stretch, slack = agent.steps.stretch, 0.005
    _base, _m, _t, start, expected, _m0, quiet = stretch.active
    step = expected / quiet
    t = start  # (the agent thread's times, from the stretch's start)
    assert 2 * expected > 4 * step + 3 * slack  # (its planned end is far off)
    agent.steps.check_stretch(t, slack)  # the agent thread notes the tally
    one_step(model, opt)
    agent.steps.check_stretch(t + 2 * step + 2 * slack, slack)
    assert stretch.active is not None and stretch.woken_by_agent == 0  # it stepped: runs on
    agent.steps.check_stretch(t + 4 * step + 4 * slack, slack)  # no step since
    assert stretch.woken_by_agent == 1
    one_step(model, opt)  # the full hook is back: the stretch ends, each step counted once
    assert stretch.active is None
    assert [s["step"] for s in step_items(agent)] == list(range(1, 203))


def test_after_learning_no_python_node_hook_runs_and_stretches_still_end_on_their_last_step(make_agent):
    """Issue 47 item 6's cut: once the backward watch has thinned its hooks, the kept ones
    count in C (agent/tensors/backward.py) and the backward wrapper counts the stretch down -- no
    Python hook of the agent's on a quiet step at all -- and each stretch still ends at its
    planned last step (by the training thread, not the agent thread's wake-up)."""
    agent = stepping_agent(make_agent)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())
    started(agent, model, opt)
    for _ in range(10):
        one_step(model, opt)
    watch = agent.backward
    assert watch.in_c
    fired, tallied = watch.fired, watch.tally_info().misses
    for _ in range(120):
        one_step(model, opt)
    assert watch.fired == fired  # (no Python node hook ran)
    assert watch.tally_info().misses - tallied == 120
    stretch = agent.steps.stretch
    assert stretch.stretches >= 3 and stretch.woken_by_agent == 0
    assert [s["step"] for s in step_items(agent)] == list(range(1, 131))
    assert agent.errors == 0 and agent.steps.errors == 0 and watch.errors == 0


def _state_bytes(*optimizers) -> int:
    return sum(
        t.untyped_storage().nbytes()
        for o in optimizers
        for st in o.state.values()
        for t in st.values()
        if isinstance(t, torch.Tensor)
    )


def _cpu(sample) -> dict:
    return {d["device"]: d for d in sample["devices"]}["cpu"]


def test_an_optimizer_first_stepping_inside_a_stretch_reads_na_with_the_reason_until_it_is_met(make_agent):
    """A head added late, whose optimizer's first step falls inside a quiet stretch: the
    global hook is a C tally there, so the agent cannot meet that optimizer -- but it
    counts a step no known optimizer made. Until the full hook meets it, the optimizer
    state is n/a with the reason (never the known optimizer's alone); the agent thread
    puts the full hook back, and from the next iteration the state is whole again."""
    agent, model, opt = mid_stretch(make_agent)
    stretch = agent.steps.stretch
    head = mlp(1)
    opt2 = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)

    def both():
        opt.zero_grad()
        opt2.zero_grad()
        x = torch.randn(8, 16)
        (model(x).pow(2).mean() + head(x).pow(2).mean()).backward()
        opt.step()
        opt2.step()

    both()
    assert stretch.active is not None and stretch.unmet() == 1  # (still inside the stretch)
    assert len(opt2.state) > 0  # its momentum exists: memory the agent has not met
    cpu = _cpu(agent.sample_once())
    assert cpu["buckets"]["optimizer_state"] is None
    assert cpu["buckets"]["other_allocated"] is None
    assert UNMET_STATE in cpu["buckets_note"]
    agent.steps.check_stretch(time.monotonic(), 0.0)  # the agent thread's turn: the full hook back
    assert stretch.woken_by_agent >= 1
    both()  # the stretch ends at the primary's step; the head's optimizer meets the full hook
    assert opt2 in agent.optimizers()
    for _ in range(3):
        both()
        assert stretch.active is None or stretch.unmet() == 0
    cpu = _cpu(agent.sample_once())
    assert cpu["buckets"]["optimizer_state"] == _state_bytes(opt, opt2)
    assert "buckets_note" not in cpu or UNMET_STATE not in cpu["buckets_note"]
    for _ in range(40):  # stretches run again, the head's steps known in them
        both()
        assert stretch.unmet() == 0
    assert stretch.stretches >= 2 and not stretch.unmet_seen
    assert agent.errors == 0 and agent.steps.errors == 0


def test_a_known_second_optimizer_stepping_inside_stretches_keeps_its_state_known(make_agent):
    """A GAN's two optimizers, both met: the other one's steps inside a stretch are known
    ones (its own tally), so nothing turns n/a."""
    agent, model, opt = mid_stretch(make_agent, steps=5)
    other = mlp(1)
    opt2 = torch.optim.Adam(other.parameters())
    agent.watch(optimizer=opt2)
    for _ in range(60):
        one_step(model, opt)
        one_step(other, opt2)
        assert agent.steps.stretch.unmet() == 0
    cpu = _cpu(agent.sample_once())
    assert cpu["buckets"]["optimizer_state"] == _state_bytes(opt, opt2)
    assert not agent.steps.stretch.unmet_seen


def test_an_optimizer_that_stepped_once_unseen_keeps_its_state_na_but_not_the_stretches_away(make_agent):
    """An optimizer that steps once inside a stretch and never again, kept alive: its state
    is memory the agent never met (n/a with the reason for the rest of the run), but the
    stretches -- the agent's cost on short steps -- come back after UNMET_WAIT steps."""
    from vramscope.agent.steps.stretch import UNMET_WAIT

    agent, model, opt = mid_stretch(make_agent)
    stretch = agent.steps.stretch
    other = mlp(1)
    once = torch.optim.SGD(other.parameters(), lr=0.01, momentum=0.9)
    other(torch.randn(8, 16)).pow(2).mean().backward()
    once.step()  # inside the stretch: counted, not met
    assert stretch.unmet() == 1
    begun, steps = stretch.stretches, 0
    while stretch.stretches == begun and steps < UNMET_WAIT + 200:  # (this stretch's end, a quiet run)
        one_step(model, opt)
        steps += 1
    assert stretch.unmet_seen and once not in agent.optimizers()
    assert stretch.stretches > begun, steps  # stretches again
    cpu = _cpu(agent.sample_once())
    assert cpu["buckets"]["optimizer_state"] is None and UNMET_STATE in cpu["buckets_note"]
