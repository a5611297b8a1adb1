"""Parameters the agent has not met, watched until their first gradient (issue 47, item 1)."""

from __future__ import annotations

import copy
import io
import pickle

import torch

from vramscope.agent.tensors.unmet_params import UnmetParams

from tests.agent.tensors.test_instant_buckets import mlp_bn


def _hooks(param) -> int:
    return len(param._post_accumulate_grad_hooks or {})


def _watching(known=()):
    known, arms = set(known), []
    unmet = UnmetParams(lambda: known, lambda: arms.append(1))
    unmet.install()
    return unmet, known, arms


def _backward(model) -> None:
    model(torch.randn(4, 64)).square().mean().backward()


def test_a_model_alive_before_install_arms_at_its_first_gradient_and_never_again():
    model = mlp_bn(32)
    frozen = model[0].bias.requires_grad_(False)
    unmet, _known, arms = _watching()
    try:
        trainable = [p for p in model.parameters() if p.requires_grad]
        assert unmet.scanned >= len(trainable) and _hooks(trainable[0]) == 1
        assert frozen._post_accumulate_grad_hooks is None  # (no gradient: nothing to watch)
        _backward(model)
        assert arms and all(_hooks(p) == 0 for p in trainable)  # one-shot: every hook gone
        count = len(arms)
        _backward(model)
        assert len(arms) == count
    finally:
        unmet.uninstall()


def test_a_parameter_met_before_its_first_gradient_arms_nothing():
    unmet, known, arms = _watching()
    try:
        model = mlp_bn(32)  # (built while watched: registration)
        assert all(_hooks(p) == 1 for p in model.parameters())
        known |= {id(p) for p in model.parameters()}  # met at a forward or its optimizer's step
        _backward(model)
        assert not arms and all(_hooks(p) == 0 for p in model.parameters())
    finally:
        unmet.uninstall()


def test_copies_and_loaded_models_are_watched_and_the_hooks_never_travel_with_them():
    unmet, known, arms = _watching()
    try:
        model = mlp_bn(32)
        known |= {id(p) for p in model.parameters()}  # (its own hooks stay until its backward)
        twin = copy.deepcopy(model)
        buffer = io.BytesIO()
        torch.save(model, buffer)  # (a hook is a tensor's C attribute: not pickled)
        loaded = torch.load(io.BytesIO(buffer.getvalue()), weights_only=False)
        unpickled = pickle.loads(pickle.dumps(model))
        for other in (twin, loaded, unpickled):
            assert all(_hooks(p) == 1 for p in other.parameters())
        _backward(loaded)
        assert arms
    finally:
        unmet.uninstall()
    assert all(_hooks(p) == 0 for m in (model, twin, unpickled) for p in m.parameters())
    assert not getattr(torch.nn.Parameter.__deepcopy__, "_vramscope_wrapped", False)
    assert not getattr(torch.nn.Module.__setstate__, "_vramscope_wrapped", False)
    assert _hooks(copy.deepcopy(model)[0].weight) == 0  # (nothing watches after uninstall)


def test_a_wrapper_left_inside_torch_compiles_is_disarmed_and_a_later_agent_wraps_on_top():
    """torch.compile wraps nn.Module.__setstate__ once per process, for good, around
    whatever is there (torch/_dynamo/mutation_guard.py): a stopped agent's wrapper
    stays inside it. It must call the stopped agent no more -- before, every model
    unpickled for the rest of the process got a dead agent's hooks."""
    pristine = torch.nn.Module.__dict__["__setstate__"]
    unmet, known, arms = _watching()
    try:
        inside = torch.nn.Module.__setstate__

        def patched_setstate(self, state):  # (dynamo's, as torch 2.13 writes it)
            inside(self, state)

        torch.nn.Module.__setstate__ = patched_setstate
        unmet.uninstall()
        model = pickle.loads(pickle.dumps(mlp_bn(32)))
        assert all(_hooks(p) == 0 for p in model.parameters())  # the stopped agent: not called
        later, _known, later_arms = _watching()
        try:
            model = pickle.loads(pickle.dumps(model))
            assert all(_hooks(p) == 1 for p in model.parameters())  # the later agent's, once
            _backward(model)
            assert later_arms and not arms
        finally:
            later.uninstall()
        assert torch.nn.Module.__setstate__ is patched_setstate  # (the chain left as found)
    finally:
        unmet.uninstall()
        torch.nn.Module.__setstate__ = pristine


class _Lazy:
    """A user's object that does work when asked what it is (a proxy's ``__class__``;
    ``isinstance`` asks for it, torch.distributed's deprecated names warn)."""

    asked: list = []

    @property
    def __class__(self):
        _Lazy.asked.append(1)
        return _Lazy


def test_the_scan_at_install_asks_no_object_for_anything():
    lazy = [_Lazy() for _ in range(3)]
    unmet, _known, _arms = _watching()
    unmet.uninstall()
    assert lazy and _Lazy.asked == []
