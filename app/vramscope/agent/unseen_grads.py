"""Gradients of parameters the agent has not met: seen at the backward that makes them.

A model the agent does not know yet -- a GAN's discriminator beside a
registered generator, a second model trained after the first -- gets its
gradients at its first backward, before its optimizer's first step (where
the agent meets the optimizer, agent/steps.py) and before any forward hook of
the agent sees it. Until then its gradients are memory the gradient bucket
would leave out: a wrong figure. So the agent sees every ``backward()``:
``Tensor.backward`` calls ``torch.autograd.backward`` by attribute lookup
(torch/_tensor.py), which this module wraps. Before the autograd engine runs,
the wrapper looks at the graph about to run: the leaves it accumulates into
are the ``variable`` of its ``AccumulateGrad`` nodes ("Autograd mechanics",
pytorch.org/docs/stable/notes/autograd.html). A parameter (``nn.Parameter``)
among them that no walk of the agent found makes the gradients -- and with
them activations + temporaries -- n/a, with the reason, until a walk finds it
(its optimizer's first step, or its model's next forward: discovery is re-armed
here for that), never a figure short of them without a note.

Cost: the whole graph is walked only for a graph not seen before. Its *key*
is the first leaf reached down the first input of each node from the root
(a few nodes: the output layer's bias or weight, as a rule), so a loop that
trains two models through one ``train_step`` tells them apart. A key is
walked on its first LEARN_WALKS backwards and again whenever the agent's
parameters change (a walk found others); otherwise a backward costs the
wrapper's call and the short descent (~2 us). Leaves that are not
parameters (an input with ``requires_grad``) are not counted as gradients,
and do not make the bucket n/a.
"""

from __future__ import annotations

import weakref

LEARN_WALKS = 2  # full graph walks per key before the key is trusted
MAX_NODES = 100_000  # a walk stops here (its leaves so far still count)
MAX_DESCENT = 64  # nodes followed down from the root for the key
MAX_KEYS = 4096  # keys remembered (a loop making new graphs each step: then forgotten)


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


def _descend(root):
    """The first leaf down the first input of each node (the graph's key), or None."""
    node = root
    for _ in range(MAX_DESCENT):
        if node is None:
            return None
        leaf = _leaf_of(node)
        if leaf is not None:
            return leaf
        nxt = None
        for fn, _i in node.next_functions:
            if fn is not None:
                nxt = fn
                break
        node = nxt
    return None


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
    ``on_unseen()``: called on the training thread when a backward reaches one
    (the agent re-arms discovery there)."""

    def __init__(self, known, on_unseen=None):
        self._known = known
        self._on_unseen = on_unseen
        self._keys: dict = {}  # (id of the key leaf, the known set's size) -> walks left
        self._unseen: dict[int, weakref.ref] = {}  # id(parameter) -> weak ref, not found by a walk
        self._original = None
        self._module = None
        self.walks = 0
        self.errors = 0

    # -- install ----------------------------------------------------------------------------
    def install(self) -> None:
        if self._original is not None:
            return
        import torch.autograd

        original = torch.autograd.backward
        if getattr(original, "_vramscope_wrapped", False):
            return  # (another agent of this process wraps it already)
        watch = self

        def backward(tensors, *args, **kwargs):
            watch.before(tensors)
            return original(tensors, *args, **kwargs)

        backward.__wrapped__ = original
        backward.__doc__ = original.__doc__
        backward.__name__ = original.__name__
        backward.__qualname__ = original.__qualname__
        backward.__module__ = original.__module__
        backward._vramscope_wrapped = True
        self._original, self._module = original, torch.autograd
        torch.autograd.backward = backward

    def uninstall(self) -> None:
        original, module = self._original, self._module
        self._original = self._module = None
        if original is not None and getattr(module.backward, "__wrapped__", None) is original:
            module.backward = original

    # -- the training thread (or whichever runs the backward) ---------------------------------
    def before(self, tensors) -> None:
        try:
            roots = [t.grad_fn for t in _roots(tensors)]
            if not roots or roots[0] is None:
                return
            leaf = _descend(roots[0])
            known = self._known()
            key = (id(leaf), len(known))
            left = self._keys.get(key)
            if left is None:
                if len(self._keys) >= MAX_KEYS:
                    self._keys.clear()
                left = LEARN_WALKS
            if left <= 0:
                return
            self._keys[key] = left - 1
            self._walk(roots, known)
        except Exception:
            self.errors += 1

    def _walk(self, roots, known) -> None:
        from torch.nn import Parameter

        self.walks += 1
        found = False  # (parameters not met before this walk)
        for leaf in graph_leaves(roots):
            if isinstance(leaf, Parameter) and leaf.requires_grad and id(leaf) not in known:
                if id(leaf) not in self._unseen:
                    self._unseen[id(leaf)] = weakref.ref(leaf)
                    found = True
        if found and self._on_unseen is not None:
            self._on_unseen()

    # -- any thread ----------------------------------------------------------------------------
    def count(self) -> int:
        """Parameters a backward accumulated into that the last walk has not found (alive
        ones; those found since leave)."""
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
