"""The gradients alive now, readable from the agent thread as integers.

Why not read ``p.grad`` on the agent thread: in PyTorch a ``.grad`` read from a
second thread is unsafe at any time, not only while backward runs.
``p.grad = None`` -- what ``zero_grad(set_to_none=True)``, the default, does to
every parameter -- frees the old gradient while the parameter still points at
it, and freeing the gradient's Python object releases the GIL part way (seen
with gdb in torch 2.13). A ``p.grad`` on another thread in that window gets a
tensor being freed: heap corruption or a segfault (tests/agent/grad_race.py
reproduces it within seconds). So only the
training thread -- the one that runs ``zero_grad`` and ``backward`` -- and the
autograd engine's threads inside its hooks ever read ``.grad``; the agent
thread reads this ledger.

The ledger holds a weak reference to the storage of each gradient the
training thread has seen, with the gradient's own device and the storage's
size. A storage's Python object lives exactly as long as its memory, so the
entry leaves in the same call that hands the memory back to the allocator:
an allocator reading and the ledger never disagree about a freed gradient
(a weak reference to the tensor would go first, and the memory a moment
later -- ``zero_grad`` releases the GIL in between). The reference's callback is the builtin ``dict.pop`` (no
Python code runs, nothing can switch threads there): the entry leaves the
ledger the moment the gradient is freed, whichever thread frees it. So a
gradient freed by ``zero_grad`` -- during training, or past the last step --
leaves the ledger at once, and the sum is right without reading a tensor.
Every gradient is counted once (tied weights share one).

What the ledger cannot see by itself is a new gradient: backward makes them,
user code may assign them. It is *stale* from the first gradient node a backward
reaches (agent/tensors/backward.py, before that node writes ``.grad``), the end of a
registered model's training forward, an optimizer step's pre-hook, or a walk
that found new parameters (until their backward is watched), until the
training thread notes every gradient at a step boundary -- after the
optimizer step or ``agent.step()``, when backward is over -- as often as
RESYNC_BUDGET of the step time allows, and always when the agent thread is
waiting for a sample. The training thread also notes the gradients at every
sample it takes, and -- when it is the main thread -- between two statements
when the agent thread asks (agent/steps/handoff.py); those settle the ledger only
when no training forward's backward is pending. The agent thread hands its
samples to the training thread while the ledger is stale, and says "n/a"
rather than a stale figure when nothing comes.
"""

from __future__ import annotations

import math
import time
import weakref

import torch

from vramscope.agent.tensors.buckets import storages

_PLAIN = torch.Tensor

RESYNC_BUDGET = 0.0005  # noting the gradients after a step may take at most 0.05 % of the step time
# (timed in the hook; freeing what was noted and the cache misses cost about as much again)


class GradLedger:
    def __init__(self, clock=time.perf_counter, budget: float = RESYNC_BUDGET):
        self._live: dict = {}  # weak reference to a gradient (or its storage) -> (device, nbytes)
        self._refs: dict = {}  # id(gradient or storage) -> its weak reference: each noted once
        self.stale = True  # nothing noted yet
        # a training forward ended and its step has not (its backward may still make
        # gradients): a noting now leaves the ledger stale
        self.forward_pending = False
        self.budget = budget
        self._clock = clock
        self.every = 1  # note after every k-th step only (cost budget)
        self.countdown = 0  # steps until the next noting (the step hook counts down)
        self._noting = False  # inside note_all (on the training thread)
        self.resyncs = 0
        self.notes = 0  # gradients noted so far (with len(_live): has anything changed?)

    # -- the training thread ---------------------------------------------------------------
    def note(self, device: str, owner, nbytes: int) -> None:
        """One gradient's memory (``owner``: the tensor, its storage, or an inner tensor
        of a wrapper subclass) seen now on the training thread. PyTorch keeps one
        Python object per tensor and per storage while it lives, so its id is stable."""
        ref = self._refs.get(id(owner))
        if ref is not None and ref() is owner:
            return
        ref = weakref.ref(owner, self._live.pop)
        self._live[ref] = (device, nbytes)  # hashed while alive, so the callback finds it
        self._refs[id(owner)] = ref
        self.notes += 1

    def note_all(self, params, devices, settled: bool = True) -> None:
        """Note every parameter's gradient, under the gradient's own device (a model moved
        after registration moves its gradients at once; ``devices`` is kept for callers).
        A plain dense gradient takes the short way: its storage, with the storage's bytes.
        Gradients that are views into one buffer (DDP's gradient buckets, a flat buffer)
        share that storage and count it once."""
        if self._noting:  # called again from within (the main thread's pending call): the
            return  # outer noting covers it; two weak references to one tensor must never meet
        self._noting = True
        try:
            self._note_all(params, devices)
            self.noted(settled)
        finally:
            self._noting = False

    def _note_all(self, params, devices) -> None:
        live, refs, pop = self._live, self._refs, self._live.pop
        for p in params:
            g = p.grad
            if g is None:
                continue
            if type(g) is _PLAIN and not g.is_sparse and g.device.type != "meta":
                # keyed by the storage: it dies (and leaves the ledger) in the same call
                # that hands its memory back to the allocator, so the two never disagree
                s = g.untyped_storage()
                ref = refs.get(id(s))
                if ref is None or ref() is not s:
                    ref = weakref.ref(s, pop)
                    live[ref] = (str(g.device), s.nbytes())  # the gradient's own device
                    refs[id(s)] = ref
                    self.notes += 1
                continue
            for d, _key, nbytes, owner in storages(g):
                self.note(d, owner, nbytes)

    def noted(self, settled: bool) -> None:
        """Every owner's gradient was just noted; ``settled``: at a step boundary, with no
        backward pending, so the ledger stays current until the next training forward."""
        if settled:
            self.stale = False
        if len(self._refs) > 2 * len(self._live) + 256:  # forget the keys of freed gradients
            self._refs = {k: r for k, r in self._refs.items() if r() is not None}

    def resync(self, params, devices, step_seconds: float | None) -> None:
        """At a step boundary (the step hook calls it when ``countdown`` reaches 0 with
        the ledger stale): note every gradient (settled), timed against the budget, which
        sets how many steps pass until the next one."""
        t0 = self._clock()
        self.note_all(params, devices)
        cost = self._clock() - t0
        self.resyncs += 1
        if step_seconds:
            self.every = max(1, math.ceil(cost / (self.budget * step_seconds)))
        self.countdown = self.every

    # -- any thread ---------------------------------------------------------------------------
    def fingerprint(self) -> tuple:
        """Changes whenever a gradient is noted or freed, or the ledger goes stale."""
        return (self.stale, self.notes, len(self._live))

    def per_device(self) -> dict[str, int]:
        """Bytes of the gradients alive now, per device (integers only)."""
        out: dict[str, int] = {}
        for device, nbytes in list(self._live.values()):
            out[device] = out.get(device, 0) + nbytes
        return out
