"""Gradients of parameters the agent has not met: seen at the backward that makes them.

A model the agent does not know yet -- a GAN's discriminator beside a
registered generator, a second model trained after the first -- gets its
gradients at its first backward, before its optimizer's first step (where
the agent meets the optimizer, agent/steps/steps.py) and before any forward hook of
the agent sees it. Until then its gradients are memory the gradient bucket
would leave out: a wrong figure. So the agent sees every ``backward()``:
``Tensor.backward`` calls ``torch.autograd.backward`` by attribute lookup
(torch/_tensor.py), which this module wraps. Once the autograd engine has
run, the wrapper looks at the graph it ran: the leaves it accumulated into
are the ``variable`` of its ``AccumulateGrad`` nodes ("Autograd mechanics",
pytorch.org/docs/stable/notes/autograd.html). A parameter (``nn.Parameter``)
among them that no walk of the agent found makes the gradients -- and with
them activations + temporaries -- n/a, with the reason, until a walk finds it
(its optimizer's first step, or its model's next forward: discovery is re-armed
here for that), never a figure short of them without a note.

Cost: the graph is walked after the engine ran (its nodes outlive the
backward; only the saved tensors are freed), and only where it may hold
parameters the agent has not met: the run's first LEARN_WALKS backwards, and
a *silent* backward -- one that reached none of the gradient nodes the
backward watch hooks (agent/tensors/backward.py: each known model's first nodes), so
it ran through something else. Every other backward costs the wrapper's call
and two counter reads. Silent backwards that keep coming (a frozen model's,
an input's gradient) are walked within WALK_BUDGET of the step time once a
walk has found nothing new (until then each one is walked); one left
unwalked makes the gradients n/a until the next walk. Leaves that are not
parameters (an input with ``requires_grad``) are not counted as gradients.

A model the agent has not met whose loss is summed into a known model's (an
auxiliary head added late, a model built before the agent started or loaded
whole) reaches the known model's hooked nodes, so its backward is not silent:
its parameters' first gradients arm the walk of that backward instead
(agent/tensors/unmet_params.py). Nothing runs per step for it.
"""

from __future__ import annotations

import math
import time
import weakref

from vramscope.agent.patches import Patches
from vramscope.agent.tensors.unmet_params import UnmetParams

LEARN_WALKS = 3  # the run's first backwards, walked whatever the watch saw
WALK_BUDGET = 0.001  # walks of silent backwards: at most this share of the step time
MAX_NODES = 100_000  # a walk stops here (its leaves so far still count)


def _roots(tensors) -> list:
    if tensors is None:
        return []
    if hasattr(tensors, "grad_fn"):
        return [tensors]
    try:
        return [t for t in tensors if hasattr(t, "grad_fn")]
    except TypeError:
        return []


def _leaf_of(node):
    """The variable of an AccumulateGrad node, else None."""
    return getattr(node, "variable", None)


def graph_leaves(roots) -> list:
    """Every leaf the backward of ``roots`` (grad_fn nodes) accumulates into."""
    leaves, seen, todo = [], set(), [r for r in roots if r is not None]
    keep = list(todo)  # (the nodes stay alive while their ids are in ``seen``)
    while todo and len(seen) < MAX_NODES:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        leaf = _leaf_of(node)
        if leaf is not None:
            leaves.append(leaf)
            continue
        for fn, _i in node.next_functions:
            if fn is not None and id(fn) not in seen:
                todo.append(fn)
                keep.append(fn)
    return leaves


class UnseenGrads:
    """Wraps ``torch.autograd.backward`` (training thread); tells the samples (any
    thread) whether gradients of parameters no walk found may be alive.

    ``known()``: the ids of the parameters the agent's last walk found (a set);
    ``watch``: the backward watch (its ``fired`` counts its node hooks' calls);
    ``ledger``: stale from the start of every backward (its samples go to the
    training thread until the step); ``on_unseen()``: called on the training thread
    when a backward reached a parameter not met before (discovery is re-armed);
    ``step_seconds()``: the last step's length (the walks' budget)."""

    def __init__(self, known, watch, ledger, on_unseen=None, step_seconds=None):
        self._known = known
        self._watch = watch
        self._ledger = ledger
        self._on_unseen = on_unseen
        self._step_seconds = step_seconds
        self._learn = LEARN_WALKS
        self._skip = 0  # silent backwards left unwalked before the next walk (budget)
        self._every = 1
        self._clean = False  # the last walk found no parameter the agent has not met
        self.unchecked = False  # a silent backward went unwalked: gradients not known
        self._unseen: dict[int, weakref.ref] = {}  # id(parameter) -> weak ref, not found by a walk
        self._patches = Patches()  # torch.autograd.backward's wrapper
        self.unmet = UnmetParams(known, self._arm)  # parameters not met, until their first gradient
        self.armed = 0  # walks armed by such a parameter's first gradient
        self.walks = 0
        self.errors = 0

    # -- install ----------------------------------------------------------------------------
    def install(self) -> None:
        if self._patches:
            return
        import torch.autograd

        watch, ledger, nodes = self, self._ledger, self._watch
        info = nodes.tally_info

        def make(original, armed):
            def backward(tensors, *args, **kwargs):
                # (inline: one Python frame a backward) the ledger stale from the start -- no
                # sample on the agent thread trusts it until the step -- and the watch's counts,
                # to tell a silent backward afterwards (the thinned node hooks count in C:
                # agent/tensors/backward.py)
                if not armed.on:  # (a stopped agent's, left inside another wrapper: agent/patches.py)
                    return original(tensors, *args, **kwargs)
                fired, in_c = nodes.fired, nodes.in_c
                if in_c and nodes.ticks:  # a quiet stretch counts this backward down before the
                    nodes.tick()  # ledger is marked (see QuietStretch.caught_up), as the node hook did
                ledger.stale = ledger.forward_pending = True
                out = original(tensors, *args, **kwargs)
                if in_c and nodes.in_c:  # (not a backward whose end thinned the hooks into C)
                    m = info().misses
                    moved = m != nodes.seen
                    nodes.seen = m
                    if moved:
                        if watch._learn:
                            watch.after(tensors)
                        return out
                elif nodes.fired != fired and not watch._learn:
                    return out
                watch.after(tensors)
                return out

            return backward

        if not self._patches.wrap(torch.autograd, "backward", make):
            return  # (another agent of this process wraps it already)
        nodes.wrapped = True  # (its thinned hooks may count in C: this wrapper reads them)
        self.unmet.install()

    def uninstall(self) -> None:
        self.unmet.uninstall()
        self._watch.wrapped = False
        self._patches.undo()

    # -- the thread autograd runs a parameter's hook on ---------------------------------------------
    def _arm(self) -> None:
        """A parameter the agent has not met got its first gradient: this backward is
        walked (the wrapper looks once the engine is done)."""
        if self._learn <= 0:
            self._learn = 1
            self.armed += 1

    # -- the training thread (or whichever runs the backward) ---------------------------------
    def after(self, tensors) -> None:
        """After a learning or a silent backward (the engine done): walk its graph, within
        the budget."""
        try:
            if self._learn > 0:
                self._learn -= 1
            elif self._skip > 0 and self._clean:  # silent, over the walks' budget: not known
                self._skip -= 1
                self.unchecked = True
                return
            roots = [t.grad_fn for t in _roots(tensors)]
            t0 = time.perf_counter()
            self._walk([r for r in roots if r is not None])
            self.unchecked = False
            step = self._step_seconds() if self._step_seconds is not None else None
            if step:
                cost = time.perf_counter() - t0
                self._every = max(1, math.ceil(cost / (WALK_BUDGET * step)))
                self._skip = self._every - 1
        except Exception:
            self.errors += 1

    def _walk(self, roots) -> None:
        from torch.nn import Parameter

        self.walks += 1
        known = self._known()
        found = False  # (parameters not met before this walk)
        for leaf in graph_leaves(roots):
            if isinstance(leaf, Parameter) and leaf.requires_grad and id(leaf) not in known:
                if id(leaf) not in self._unseen:
                    self._unseen[id(leaf)] = weakref.ref(leaf)
                    found = True
        self._clean = not found and not any(key not in known for key in self._unseen)
        if found and self._on_unseen is not None:
            self._on_unseen()

    # -- any thread ----------------------------------------------------------------------------
    def count(self) -> int | None:
        """Parameters a backward accumulated into that the last walk has not found (alive
        ones; those found since leave); None: a backward went unchecked (not known)."""
        if self.unchecked:
            return None
        unseen = self._unseen
        if not unseen:
            return 0
        known = self._known()
        for key, ref in list(unseen.items()):
            if key in known or ref() is None:
                unseen.pop(key, None)
        return len(unseen)

    def devices(self) -> set[str]:
        """Where the unseen parameters live (their gradients' devices, as a rule)."""
        out = set()
        for ref in list(self._unseen.values()):
            p = ref()
            if p is not None:
                out.add(str(p.device))
        return out
