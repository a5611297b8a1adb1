"""A second model's gradients from its first backward (issue 47, item 1).

The oracle here counts every trained model's gradients as gradients from the
moment autograd writes them (``Oracle(all_gradients=True)``), whether the
agent has met the model or not: until a walk finds the model, the agent must
say n/a with the reason, never the first model's gradients alone.
"""

from __future__ import annotations

import copy

import pytest
import torch

from vramscope.agent.tensors.backward import BackwardWatch
from vramscope.agent.tensors.grads import GradLedger
from vramscope.agent.tensors.unseen_grads import LEARN_WALKS, UnseenGrads, graph_leaves

from tests.agent.oracle import pause, second_met
from tests.agent.tensors.test_instant_buckets import mlp_bn
from tests.agent.test_oracle_loops import Run, train

UNSEEN = "has not met yet"
UNCHECKED = "was not checked"


def _strict(run: Run) -> Run:
    run.oracle.all_gradients = True
    return run


def _disc():
    return torch.nn.Sequential(
        torch.nn.Linear(8, 64), torch.nn.BatchNorm1d(64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
    )


def test_graph_leaves_are_the_parameters_a_backward_accumulates_into():
    model = mlp_bn(32)
    x = torch.randn(4, 64, requires_grad=True)
    loss = model(x).square().mean()
    leaves = {id(t) for t in graph_leaves([loss.grad_fn])}
    assert leaves == {id(p) for p in model.parameters()} | {id(x)}
    frozen = model[0].weight.requires_grad_(False)
    loss = model(torch.randn(4, 64)).square().mean()
    assert id(frozen) not in {id(t) for t in graph_leaves([loss.grad_fn])}


def test_a_silent_backward_through_an_unknown_model_is_walked_and_inputs_are_not_counted():
    first, second = mlp_bn(32), mlp_bn(16)
    known = {id(p) for p in first.parameters()}
    ledger = GradLedger()
    nodes = BackwardWatch(ledger)
    nodes.cover(list(first.parameters()))  # the first model's gradient nodes, hooked
    seen = []
    watch = UnseenGrads(lambda: frozenset(known), nodes, ledger, on_unseen=lambda: seen.append(1))
    watch.install()
    try:

        def step(model, x):  # one call site for both models (a generic train_step)
            model(x).square().mean().backward()

        x = torch.randn(4, 64, requires_grad=True)  # an input leaf: not a parameter
        for _ in range(6):
            step(first, x)
        walks = watch.walks
        assert watch.count() == 0 and not seen and walks == LEARN_WALKS  # then trusted: no walks
        ledger.stale = False
        step(second, torch.randn(4, 64))  # the same line, another model: silent, walked
        assert ledger.stale  # (from its start: the agent thread hands its samples over)
        assert watch.count() == len(list(second.parameters())) and seen == [1]
        step(second, torch.randn(4, 64))
        assert seen == [1]  # (re-armed once per new parameter, not per backward)
        known |= {id(p) for p in second.parameters()}
        assert watch.count() == 0
    finally:
        watch.uninstall()
    assert not getattr(torch.autograd.backward, "_vramscope_wrapped", False)


@pytest.mark.slow
def test_gan_second_model_before_its_optimizer_steps(make_agent):
    with _strict(Run(make_agent, discover=True)) as run:
        gen, disc = mlp_bn(128), _disc()
        opt_g, opt_d = torch.optim.Adam(gen.parameters()), torch.optim.Adam(disc.parameters())
        run.start(gen, optimizers=[opt_g], register=[gen], register_opts=[opt_g])
        run.oracle.trains(  # (known once discovery finds it at a forward, or its optimizer steps)
            disc, optimizers=[opt_d], known=second_met
        )
        for i in range(30):
            fake = gen(torch.randn(16, 64))
            g_loss = -disc(fake).mean()  # the generator's step first: disc gets gradients
            pause(0.002)
            g_loss.backward()
            del g_loss, fake
            if i == 0:  # right after the backward that first fed the discriminator
                first_look = run.agent.sample_once()
            pause(0.003)
            opt_g.step()
            opt_g.zero_grad()
            if i >= 6:  # the discriminator's optimizer starts late
                d_loss = disc(torch.randn(16, 8)).mean()
                d_loss.backward()
                del d_loss
                opt_d.step()
                opt_d.zero_grad()
            pause(0.002)
    run.check()
    # (discovery finds it at its next forward -- from then on its gradients are known)
    cpu = {d["device"]: d for d in first_look["devices"]}["cpu"]
    assert cpu["buckets"]["gradients"] is None
    assert UNSEEN in cpu["buckets_note"]


@pytest.mark.slow
def test_two_models_in_turn_through_one_train_function(make_agent):
    with _strict(Run(make_agent, discover=True)) as run:
        first, opt1 = run.registered(register=False)
        train(first, opt1, steps=15)
        second = mlp_bn(96)
        opt2 = torch.optim.SGD(second.parameters(), lr=0.01, momentum=0.9)
        run.oracle.trains(second, optimizers=[opt2], known=second_met)
        for i in range(8):  # its backwards before its optimizer's first step
            loss = second(torch.randn(16, 64)).square().mean()
            loss.backward()
            del loss
            if i == 0:  # right after its first backward (no forward since: not found yet)
                first_look = run.agent.sample_once()
            pause(0.02)
        train(second, opt2, steps=10)
        agent = run.agent
    run.check()
    assert any(m is second for m in agent.models())
    cpu = {d["device"]: d for d in first_look["devices"]}["cpu"]
    # its gradients are not left out: n/a, with the reason (the parameters it has not met, or a
    # backward through none of the known models that the walks' budget left unchecked)
    assert cpu["buckets"]["gradients"] is None
    assert UNSEEN in cpu["buckets_note"] or UNCHECKED in cpu["buckets_note"]


def _with_head(run, first, opt1, head, opt2, head_from=0) -> dict:
    """Ten steps of the known model with ``head`` summed into its loss (its optimizer
    stepping from step ``head_from``); the sample taken right after the first backward."""
    first_look = None
    for i in range(10):
        opt1.zero_grad()
        loss = first(torch.randn(16, 64)).square().mean() + head(torch.randn(16, 64)).square().mean()
        loss.backward()
        del loss
        if i == 0:
            first_look = run.agent.sample_once()
        pause(0.01)
        opt1.step()
        if i >= head_from:
            opt2.step()
            opt2.zero_grad()
    return first_look


@pytest.mark.slow
def test_a_new_model_summed_into_a_known_models_loss_after_the_first_backwards(make_agent):
    """The edge the walks' schedule leaves: a model built after the run's first backwards
    whose loss is summed into the known model's (an auxiliary head added late). Its
    backward reaches the known model's hooked gradient nodes, so it is not silent and
    would not be walked; building it registers parameters the agent has not met, which
    arms a walk of the next backward -- its gradients are n/a with the reason, never
    the known model's alone."""
    with _strict(Run(make_agent, discover=True)) as run:
        first, opt1 = run.registered()
        train(first, opt1, steps=15)  # past the learning walks: the known model's nodes fire
        head = mlp_bn(96)  # (after the first backwards)
        opt2 = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
        # (known once discovery finds it at a forward, or once its optimizer steps)
        run.oracle.trains(
            head,
            optimizers=[opt2],
            # (its optimizer's first step may fall inside a quiet stretch, whose hooks are C: until
            # the agent meets it, its state is n/a with the reason -- agent/steps/stretch.py)
            known=second_met,
        )
        walks = run.agent.unseen.walks
        first_look = _with_head(run, first, opt1, head, opt2, head_from=5)  # its optimizer starts late
        agent = run.agent
    run.check()
    assert agent.unseen.walks > walks  # the backward after it was built was walked
    cpu = {d["device"]: d for d in first_look["devices"]}["cpu"]
    assert cpu["buckets"]["gradients"] is None
    assert UNSEEN in cpu["buckets_note"]


@pytest.mark.slow
def test_a_deep_copied_model_summed_into_a_known_models_loss_after_the_first_backwards(make_agent):
    """The same late head, made with ``copy.deepcopy`` of a model built before the agent
    started: copying registers no parameter, but each copied parameter arms the walk
    (agent/tensors/unseen_grads.py) -- its gradients are n/a with the reason, never the
    known model's alone; the copy is met, and every figure is exact after."""
    template = mlp_bn(96)  # (before the agent: its construction armed nothing)
    with _strict(Run(make_agent, discover=True)) as run:
        first, opt1 = run.registered()
        train(first, opt1, steps=15)  # past the learning walks
        armed, walks = run.agent.unseen.armed, run.agent.unseen.walks
        head = copy.deepcopy(template)
        opt2 = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
        run.oracle.trains(head, optimizers=[opt2], known=second_met)
        first_look = _with_head(run, first, opt1, head, opt2)
        agent = run.agent
    run.check()
    assert agent.unseen.armed > armed and agent.unseen.walks > walks
    assert any(m is head for m in agent.models()) or opt2 in agent.optimizers()
    cpu = {d["device"]: d for d in first_look["devices"]}["cpu"]
    assert cpu["buckets"]["gradients"] is None
    assert UNSEEN in cpu["buckets_note"]
    from torch.nn import Parameter

    assert not getattr(Parameter.__deepcopy__, "_vramscope_wrapped", False)  # left as found


def test_the_backward_whose_end_thins_the_hooks_into_c_is_not_taken_for_a_silent_one():
    """The node hooks go to C at the end of the watch's last learning backward (a queued
    engine callback): that backward fired its Python hooks, so it is judged by them -- not
    by the C counter installed while it ran, which it never moved. (An FSDP2 run, whose
    watch learns a step later than the wrapper, read its gradients as n/a for it.)"""
    model = mlp_bn(32)
    known = {id(p) for p in model.parameters()}
    ledger = GradLedger()
    nodes = BackwardWatch(ledger)
    watch = UnseenGrads(lambda: frozenset(known), nodes, ledger)
    watch.install()
    try:

        def step():
            model(torch.randn(4, 64)).square().mean().backward()

        step()  # (the agent covers the model at its first step boundary: after a backward)
        nodes.cover(list(model.parameters()))
        for _ in range(LEARN_WALKS):
            step()
        assert nodes.in_c and nodes.tally_info().misses == 0  # thinned into C at its end
        assert watch.walks == LEARN_WALKS and not watch.unchecked and watch.count() == 0
        for _ in range(5):
            step()
        assert nodes.tally_info().misses == 5 and watch.walks == LEARN_WALKS  # not silent
    finally:
        watch.uninstall()


def _late_head(make_agent, make_head, known_steps_between=0):
    """The known model trained past the learning walks, then ``make_head()`` (a model
    the agent has not met), ``known_steps_between`` steps of the known model alone, then
    the head summed into the known model's loss: its gradients n/a with the reason from
    the first backward that feeds it, every figure exact after."""
    with _strict(Run(make_agent, discover=True)) as run:
        first, opt1 = run.registered()
        train(first, opt1, steps=15)  # past the learning walks
        head = make_head()
        train(first, opt1, steps=known_steps_between)
        opt2 = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
        run.oracle.trains(head, optimizers=[opt2], known=second_met)
        first_look = _with_head(run, first, opt1, head, opt2)
        agent = run.agent
    run.check()
    assert any(m is head for m in agent.models()) or opt2 in agent.optimizers()
    cpu = {d["device"]: d for d in first_look["devices"]}["cpu"]
    assert cpu["buckets"]["gradients"] is None
    assert UNSEEN in cpu["buckets_note"]


@pytest.mark.slow
def test_a_model_built_before_the_agent_started_summed_into_a_known_loss_late(make_agent):
    """A model that existed before the agent started (a notebook's, attached later) was
    never registered while the agent watched: it is found among the process's objects
    when the agent starts."""
    template = mlp_bn(96)
    _late_head(make_agent, lambda: template)


@pytest.mark.slow
def test_a_model_built_late_and_first_trained_several_steps_after(make_agent):
    """Built after the first backwards, but trained only five steps later (a curriculum's
    head): the walk its construction armed went to a backward it was not in."""
    _late_head(make_agent, lambda: mlp_bn(96), known_steps_between=5)


@pytest.mark.slow
def test_a_model_loaded_whole_with_torch_load_summed_into_a_known_loss_late(make_agent, tmp_path):
    """``torch.save(model)`` then ``torch.load(..., weights_only=False)``: unpickling
    registers no parameter (nn.Module.__setstate__ sets them all at once)."""
    path = tmp_path / "head.pt"
    torch.save(mlp_bn(96), path)
    _late_head(make_agent, lambda: torch.load(path, weights_only=False), known_steps_between=2)
