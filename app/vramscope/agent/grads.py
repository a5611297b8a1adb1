"""The gradient storages alive now, readable from the agent thread as integers.

Why not read ``p.grad`` on the agent thread: in PyTorch a ``.grad`` read from a
second thread is unsafe at any time, not only while backward runs.
``p.grad = None`` -- what ``zero_grad(set_to_none=True)``, the default, does to
every parameter -- frees the old gradient while the parameter still points at
it, and freeing a tensor's Python object releases the GIL (so that freeing a
large tensor does not stall other threads). A ``p.grad`` on another thread in
that window gets a tensor being freed: heap corruption or a segfault
(tests/agent/grad_race.py reproduces it within seconds). So only the
training thread -- the one that runs ``zero_grad`` and ``backward`` -- and the
autograd engine's threads inside its hooks ever read ``.grad``; the agent
thread reads this ledger.

The ledger holds a weak reference to each gradient storage the training thread
has seen, with its device and size. The reference's callback is the builtin
``dict.pop`` (no Python code runs, nothing can switch threads there): the
entry leaves the ledger the moment the storage is freed, whichever thread
frees it. So a gradient freed by ``zero_grad`` -- during training, or past the
last step -- leaves the ledger at once, and the sum is right without reading a
tensor. Every storage is counted once (tied weights, views into one buffer).

What the ledger cannot see by itself is a new gradient: backward makes them,
user code may assign them. It is *stale* from the end of a training forward
(whose backward will make gradients), an optimizer step's pre-hook (a
backward ran before it) or a walk that found new parameters, until the
training thread notes every gradient at a step boundary -- after the
optimizer step or ``agent.step()``, when backward is over -- as often as
RESYNC_BUDGET of the step time allows, and always when the agent thread is
waiting for a sample. The training thread also notes the gradients at every
sample it takes, which keeps the entries current but leaves a pending
backward pending. The agent thread hands its samples to the training thread
while the ledger is stale (agent/handoff.py), and says "n/a" rather than a
stale figure when no training hook comes.
"""

from __future__ import annotations

import math
import time
import weakref

RESYNC_BUDGET = 0.002  # noting the gradients after a step may take at most 0.2 % of the step time


class GradLedger:
    def __init__(self, clock=time.perf_counter, budget: float = RESYNC_BUDGET):
        self._live: dict = {}  # weak reference to a gradient storage -> (device, nbytes)
        self._refs: dict = {}  # (device, storage key) -> its weak reference: each storage noted once
        self.stale = True  # nothing noted yet
        self.budget = budget
        self._clock = clock
        self._every = 1  # note after every k-th step only (cost budget)
        self._skip = 0
        self.resyncs = 0
        self.last_resync_seconds: float | None = None

    # -- the training thread ---------------------------------------------------------------
    def note(self, device: str, key, owner, nbytes: int) -> None:
        """One gradient storage (``owner``: the storage object, or the tensor where it
        has no single storage) seen now on the training thread."""
        k = (device, key)
        ref = self._refs.get(k)
        if ref is not None and ref() is owner:
            return
        ref = weakref.ref(owner, self._live.pop)
        self._live[ref] = (device, nbytes)  # hashed while alive, so the callback finds it
        self._refs[k] = ref

    def noted(self, settled: bool) -> None:
        """Every owner's gradient was just noted; ``settled``: at a step boundary, with no
        backward pending, so the ledger stays current until the next training forward."""
        if settled:
            self.stale = False
        if len(self._refs) > 2 * len(self._live) + 256:  # forget the keys of freed storages
            self._refs = {k: r for k, r in self._refs.items() if r() is not None}

    def after_step(self, resync, step_seconds: float | None, force: bool = False) -> None:
        """At a step boundary: ``resync()`` (note every gradient, settled) when the ledger
        is stale, on as many steps as RESYNC_BUDGET allows (on this one if ``force``)."""
        if not self.stale:
            return
        if self._every > 1 and not force:
            self._skip = (self._skip + 1) % self._every
            if self._skip:
                return
        t0 = self._clock()
        resync()
        cost = self._clock() - t0
        self.resyncs += 1
        self.last_resync_seconds = cost
        if step_seconds:
            self._every = max(1, math.ceil(cost / (self.budget * step_seconds)))

    # -- any thread ---------------------------------------------------------------------------
    def per_device(self) -> dict[str, int]:
        """Bytes of the gradient storages alive now, per device (integers only)."""
        out: dict[str, int] = {}
        for device, nbytes in list(self._live.values()):
            out[device] = out.get(device, 0) + nbytes
        return out
