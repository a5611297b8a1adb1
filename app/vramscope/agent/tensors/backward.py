"""Every backward seen before it makes a gradient, whichever model it runs through.

The gradient ledger (agent/tensors/grads.py) must go stale before a backward assigns
its first gradient, or the agent thread shows a stale gradient figure while
the allocator already holds the new gradients (they would land in
"activations + temporaries"). A registered model's forward post-hook marks
the ledger stale; a backward through a model nobody registered (a GAN's
second model, two models trained in turn, ``model.forward(x)`` which skips
the module's hooks) announces nothing there.

So the watch hooks autograd itself: a pre-hook on the ``AccumulateGrad``
node of each parameter the optimizers and models hold -- the node that
writes ``param.grad`` (``torch.autograd.graph.get_gradient_edge``; "Autograd
mechanics", pytorch.org/docs/stable/notes/autograd.html). The pre-hook runs
before the node assigns the gradient, on whichever thread runs the backward,
with the GIL held: the ledger goes stale first, so no sample sees the new
gradient under "activations". While learning, the first pre-hook of a
backward queues an engine callback (``Variable._execution_engine.
queue_callback``, the way DDP finds the end of backward) that marks the
backward over; once thinned, a hook only marks the ledger stale (it is
idempotent: a second hooked node in the same backward changes nothing), which
halves its cost on the training thread.

Cost: a Python hook costs the backward a few microseconds each time it
fires, too much on every parameter of a 400-tensor model. For the first
LEARN_BACKWARDS backwards every parameter is hooked and the watch learns
which ones autograd reaches first (the output layer's, usually); then only
those keep their hook. The watch holds the hooked nodes (PyTorch keeps a
parameter's ``AccumulateGrad`` alive only while someone holds it): dropping
a node drops its hook for good, where a removed tensor hook would leave
PyTorch's per-tensor shim behind. A new parameter layout (a late parameter
group, a model met late, LoRA adapters) starts a new learning round.

Once thinned, where the agent wraps ``torch.autograd.backward``
(agent/tensors/unseen_grads.py: every ``Tensor.backward`` goes through it, and it
marks the ledger stale at its start), the kept hooks leave Python: each
one's value in its node's hook dict becomes ``tally``, a C callable that
counts its calls (an uncached ``functools.lru_cache`` around the ``append``
of a ``deque(maxlen=0)``, which keeps nothing and returns None, as a
pre-hook must; agent/steps/stretch.py uses the same counter). The wrapper then
reads the tally once after the engine ran (unmoved: the backward was silent),
and counts a quiet stretch down at each backward's start (``tick``). A Python call
per backward less -- ~3-7 us of a 2 ms step (bench/agent_thread_cost.py).
"""

from __future__ import annotations

import collections
import functools

LEARN_BACKWARDS = 3  # backwards watched on every parameter before the hooks are thinned


def new_tally():
    """A C callable taking a node pre-hook's ``grad_outputs`` that counts its calls
    (``cache_info().misses``), keeps nothing and returns None."""
    return functools.lru_cache(maxsize=0)(collections.deque(maxlen=0).append)


def _accumulate_node(p):
    from torch.autograd.graph import get_gradient_edge

    return get_gradient_edge(p).node


class BackwardWatch:
    def __init__(self, ledger, learn: int = LEARN_BACKWARDS):
        self._ledger = ledger
        self._learn = learn
        self.running = False  # a backward is between its first gradient and its end
        self._nodes: dict[int, tuple] = {}  # id(param) -> (param, node, handle)
        self._firsts: set[int] = set()  # id(param) whose node a backward reached first
        self._learned = 0  # backwards seen in the current learning round (0: thinned)
        self._layout: tuple = ()
        self.covered = None  # the key of the layout hooked (see cover)
        self._queue = None
        self.errors = 0
        # backwards left in a quiet stretch (agent/steps/stretch.py): at the last, ``on_ticks()``
        # puts the optimizer's full post-hook back before that step's update
        self.ticks = 0
        self.on_ticks = None
        self.fired = (
            0  # Python node hook calls (agent/tensors/unseen_grads.py: a backward that made none is "silent")
        )
        # the thinned hooks' C counter, where the backward wrapper reads it (``in_c``)
        self.tally = new_tally()
        self.tally_info = self.tally.cache_info
        self.wrapped = False  # the backward wrapper is installed: the thinned hooks may go to C
        self.in_c = False  # the kept hooks are the tally (no Python per backward)
        self.seen = 0  # the tally's count after the last backward the wrapper saw

    @property
    def ready(self) -> bool:
        """Thinned hooks in place: each backward through the watched models calls one."""
        return bool(self._nodes) and not self._learned

    # -- the training thread ---------------------------------------------------------------
    def cover(self, params, key=None) -> None:
        """Hook the gradient nodes of ``params`` (a new layout: learn again). Call it on
        the thread that trains, between steps (a node is made for a parameter here).
        ``key``: the caller's name for this layout (``covered`` keeps it)."""
        params = [p for p in params if getattr(p, "requires_grad", False)]
        # (where each one lives: moved to another device or dtype, a parameter's gradient
        # goes through a new AccumulateGrad node, which is hooked anew)
        layout = tuple((id(p), p.device, p.dtype) for p in params)
        self.covered = key
        if layout == self._layout:
            return
        self.drop()
        self.covered = key
        self._layout = layout
        for p in params:
            try:
                node = _accumulate_node(p)
                if node is None:
                    continue
                self._nodes[id(p)] = (p, node, node.register_prehook(self._hook_for(id(p))))
            except Exception:
                self.errors += 1
        self._learned = self._learn

    def drop(self) -> None:
        if self.ticks:  # no node hook left to end a quiet stretch: end it now
            self.ticks = 0
            self._ticked()
        for _p, _node, handle in self._nodes.values():
            try:
                handle.remove()
            except Exception:
                pass
        self._nodes.clear()
        self._layout = ()
        self.covered = None
        self.in_c = False

    def _hook_for(self, key: int):
        def hook(grad_outputs):
            self.fired += 1
            if not self._learned:  # thinned: mark the ledger stale, nothing more (no callback)
                ticks = self.ticks
                if ticks:  # a quiet stretch counts down (first: see QuietStretch.caught_up)
                    self.ticks = ticks - 1
                    if ticks == 1:
                        self._ticked()
                ledger = self._ledger
                ledger.stale = ledger.forward_pending = True
            elif not self.running:
                self._start(key)
            return None

        return hook

    def tick(self) -> None:
        """The wrapper, at the start of a backward, with the kept hooks in C: a quiet
        stretch counts down (its last backward puts the optimizer's full hook back before
        that step's update). Every backward counts -- another model's too, which ends a
        stretch early (its steps then run as plain quiet steps), never late."""
        ticks = self.ticks
        if ticks:
            self.ticks = ticks - 1
            if ticks == 1:
                self._ticked()

    def _ticked(self) -> None:
        try:
            self.on_ticks()
        except Exception:
            self.errors += 1

    def _start(self, key: int) -> None:
        try:
            self.running = True
            ledger = self._ledger
            ledger.stale = ledger.forward_pending = True  # before the first gradient lands
            if self._learned:
                self._firsts.add(key)
            queue = self._queue
            if queue is None:
                from torch.autograd import Variable

                queue = self._queue = Variable._execution_engine.queue_callback
            queue(self._end)
        except Exception:
            self.running = False
            self.errors += 1

    def _end(self) -> None:
        self.running = False
        if self._learned:
            self._learned -= 1
            if not self._learned:
                self._thin()

    def _thin(self) -> None:
        """Keep the hooks autograd reached first; drop the others' nodes (and hooks)."""
        keep = self._firsts
        for key in [k for k in self._nodes if k not in keep]:
            _p, _node, handle = self._nodes.pop(key)
            try:
                handle.remove()
            except Exception:
                pass
        if self.wrapped:
            self._to_c()

    def _to_c(self) -> None:
        """The kept hooks' values become the tally (all of them, or none: a backward
        counted in both places would count twice)."""
        swapped = []
        try:
            for key, (_p, _node, handle) in self._nodes.items():
                hooks = handle.hooks_dict_ref()
                if hooks is None or handle.id not in hooks:
                    raise LookupError("a node's hook dict is gone")
                swapped.append((hooks, handle.id, hooks[handle.id]))
                hooks[handle.id] = self.tally
        except Exception:
            for hooks, hid, fn in swapped:
                hooks[hid] = fn
            return
        self.seen = self.tally_info().misses
        self.in_c = bool(swapped)
