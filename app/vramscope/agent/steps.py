"""Training steps: counted from optimizer hooks, or from ``agent.step()``.

A global optimizer step post-hook (``torch.optim.optimizer.
register_optimizer_step_post_hook``) sees every ``optimizer.step()``. The
first optimizer that steps (or the first one registered) is the *primary*
one: its steps are the training steps, so a GAN's two optimizers do not
count each iteration twice. Once the user calls ``agent.step()`` the manual
calls define the steps and the hooks only mark step boundaries.

The hook runs on the training thread, so it does almost nothing: a clock
read, counters, one allocator counter read, a rate-limited full read
(non-blocking) and an append of the raw figures to a queue that the agent
thread drains and turns into step items. Both optimizer hooks and
``agent.step()`` are also where the training thread takes a sample the agent
thread asked for (agent/handoff.py).
"""

from __future__ import annotations

import collections
import time
import weakref

MAX_PENDING = 65536  # step records waiting for the agent thread (bounded)


class StepTracker:
    def __init__(self, on_boundary=None, read_stats=None, clock=time.monotonic, wall=time.time,
                 phases=None, handoff=None, ledger=None):
        self.count = 0
        self.manual = False
        self._primary = None  # weakref to the primary optimizer
        self._last = None  # monotonic time of the previous step end
        self._clock = clock
        self._wall = wall
        self._on_boundary = on_boundary  # callable(optimizers_seen) on the training thread
        self._read_stats = read_stats  # callable() -> {device: fields} | None (rate-limited)
        self.records: collections.deque = collections.deque(maxlen=MAX_PENDING)  # drained by the agent
        self.errors = 0
        self._phases = phases  # PhaseTracker or None: its readings go with each step record
        self._handoff = handoff  # Handoff or None: a sample the agent thread asked for
        self._ledger = ledger  # GradLedger or None: stale from a step's pre-hook (backward ran)
        self.last_duration: float | None = None  # seconds between the last two step ends
        self._hook_handle = None
        self._pre_handle = None

    # -- hooks ----------------------------------------------------------------------
    def install(self) -> None:
        if self._hook_handle is not None:
            return
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook, register_optimizer_step_pre_hook,
        )
        self._hook_handle = register_optimizer_step_post_hook(self._optimizer_hook)
        if self._phases is not None or self._handoff is not None or self._ledger is not None:
            self._pre_handle = register_optimizer_step_pre_hook(self._optimizer_pre_hook)

    def uninstall(self) -> None:
        if self._hook_handle is not None:
            self._hook_handle.remove()
            self._hook_handle = None
        if self._pre_handle is not None:
            self._pre_handle.remove()
            self._pre_handle = None

    def _optimizer_pre_hook(self, optimizer, args, kwargs) -> None:
        try:
            if self._ledger is not None:
                self._ledger.stale = True  # the backward before this step made gradients
            if self._phases is not None:
                self._phases.optimizer_pre()
            handoff = self._handoff
            if handoff is not None and handoff.wanted:
                handoff.serve()
        except Exception:  # never break the user's step
            self.errors += 1

    def set_primary(self, optimizer) -> None:
        if self._primary is None or self._primary() is None:
            self._primary = weakref.ref(optimizer)

    def _optimizer_hook(self, optimizer, args, kwargs) -> None:
        try:
            if self._phases is not None:
                self._phases.optimizer_post()
            self.set_primary(optimizer)
            is_primary = self._primary() is optimizer
            if self._on_boundary is not None:
                self._on_boundary(optimizer)
            if is_primary and not self.manual:
                self._mark("optimizer")
            handoff = self._handoff
            if handoff is not None and handoff.wanted:
                handoff.serve()
        except Exception:  # never break the user's step
            self.errors += 1

    def manual_step(self) -> None:
        self.manual = True
        if self._on_boundary is not None:
            self._on_boundary(None)
        self._mark("manual")
        handoff = self._handoff
        if handoff is not None and handoff.wanted:
            handoff.serve()

    # -- records --------------------------------------------------------------------
    def _mark(self, source: str) -> None:
        now = self._clock()
        duration = None if self._last is None else now - self._last
        self._last = now
        self.last_duration = duration
        self.count += 1
        devices = self._read_stats() if self._read_stats is not None else None
        phases = self._phases.take() if self._phases is not None else None
        self.records.append((self.count, self._wall(), duration, source, devices, phases))
