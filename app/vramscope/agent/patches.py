"""PyTorch's callables the agent wraps, and how they go back.

The agent wraps a few of PyTorch's callables (``torch.autograd.backward``,
``nn.Parameter.__deepcopy__``, ``nn.Module.__setstate__``, ``torch.compile``,
``init_process_group``). At stop, or in a forked child, each goes back as found.
Something else may have wrapped one since, keeping the agent's wrapper inside
its own: torch.compile's dynamo wraps ``nn.Module.__setstate__`` once per
process, for good (``install_generation_tagging_init``,
torch/_dynamo/mutation_guard.py). Then the agent's wrapper cannot be taken
out; it is *disarmed* instead -- it calls what it wrapped and nothing of the
agent's, so a stopped agent is never called again -- and a later agent wraps
on top of the chain.
"""

from __future__ import annotations

WRAPPED = "_vramscope_wrapped"  # set on each wrapper of the agent's


class Armed:
    """``on`` until its wrapper is put back or disarmed: a wrapper reads it per call
    (an attribute, not ``__bool__``: no Python call on a backward's path)."""

    __slots__ = ("on",)

    def __init__(self):
        self.on = True


def _current(owner, name: str):
    if isinstance(owner, type):  # (a class's own attribute, not one it inherits)
        return owner.__dict__.get(name)
    return getattr(owner, name, None)


class Patches:
    """The wrappers one part of the agent put in place, in order."""

    def __init__(self):
        self._undo: list[tuple] = []  # (owner, name, original, wrapper, its Armed)

    def __bool__(self) -> bool:
        return bool(self._undo)

    def wrap(self, owner, name: str, make) -> bool:
        """Put ``make(original, armed)`` -- a function that calls ``original`` alone once
        ``armed.on`` is false -- in place of ``owner.name``. False where there is nothing to
        wrap or a wrapper of an agent's is there already (another agent of this process)."""
        original = _current(owner, name)
        if original is None or getattr(original, WRAPPED, False):
            return False
        armed = Armed()
        wrapper = make(original, armed)
        for attr in ("__doc__", "__name__", "__qualname__", "__module__"):
            try:
                setattr(wrapper, attr, getattr(original, attr, None))
            except (AttributeError, TypeError):
                pass
        wrapper.__wrapped__ = original
        setattr(wrapper, WRAPPED, True)
        setattr(owner, name, wrapper)
        self._undo.append((owner, name, original, wrapper, armed))
        return True

    def undo(self) -> None:
        """Every wrapper disarmed; those still on top put back as found."""
        undo, self._undo = self._undo, []
        for owner, name, original, wrapper, armed in reversed(undo):
            armed.on = False
            if _current(owner, name) is wrapper:
                setattr(owner, name, original)
