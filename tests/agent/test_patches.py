"""The agent's wrappers of PyTorch's callables: put back as found, or disarmed."""

from __future__ import annotations

import types

from vramscope.agent.patches import Patches


def _owner():
    calls = []
    owner = types.SimpleNamespace(f=lambda x: calls.append(("original", x)) or x)
    return owner, calls


def _make(calls):
    def make(original, armed):
        def wrapper(x):
            if armed.on:
                calls.append(("agent", x))
            return original(x)

        return wrapper

    return make


def test_a_wrapper_on_top_goes_back_as_found_and_a_second_agent_does_not_wrap_twice():
    owner, calls = _owner()
    original = owner.f
    first, second = Patches(), Patches()
    assert first.wrap(owner, "f", _make(calls)) and first
    assert not second.wrap(owner, "f", _make(calls)) and not second  # (one agent's is there)
    assert owner.f(1) == 1 and calls == [("agent", 1), ("original", 1)]
    assert owner.f.__wrapped__ is original
    first.undo()
    assert owner.f is original and not first


def test_a_wrapper_something_else_wrapped_over_is_disarmed_and_a_later_one_goes_on_top():
    owner, calls = _owner()
    first = Patches()
    first.wrap(owner, "f", _make(calls))
    inside = owner.f
    owner.f = lambda x: inside(x)  # (torch.compile's dynamo does this to nn.Module.__setstate__)
    outer = owner.f
    first.undo()
    assert owner.f is outer  # (not taken out from under the other wrapper)
    calls.clear()
    owner.f(2)
    assert calls == [("original", 2)]  # the stopped agent is not called
    later = Patches()
    assert later.wrap(owner, "f", _make(calls))
    calls.clear()
    owner.f(3)
    assert calls == [("agent", 3), ("original", 3)]  # once: the later agent's
    later.undo()
    assert owner.f is outer


def test_a_class_attribute_is_wrapped_where_the_class_holds_it_not_where_it_inherits_it():
    class Base:
        def g(self):
            return "base"

    class Child(Base):
        pass

    patches = Patches()
    assert not patches.wrap(Child, "g", _make([]))  # (Child holds no g of its own)
    assert patches.wrap(Base, "g", _make([]))
    assert Child().g() == "base"
    patches.undo()
    assert Base.__dict__["g"].__name__ == "g" and not hasattr(Base.__dict__["g"], "__wrapped__")
