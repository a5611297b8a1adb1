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
import threading
import time
import weakref

from vramscope.agent.protocol import ItemKind

MAX_PENDING = 65536  # step records waiting for the agent thread (bounded)
STEP_READ = ItemKind.STEP  # (looked up once: the step hook reads the allocator for this consumer)
# while phases are read on at least every k-th step, the optimizer pre-hook stays placed:
# placing and removing it twice per k steps costs the training thread more (~15 us each,
# cold, bench/agent_thread_cost.py) than a call that returns at once (~2-3 us)
KEEP_PRE_HOOK_EVERY = 8


class StepTracker:
    def __init__(self, on_boundary=None, reader=None, clock=time.monotonic, wall=time.time,
                 phases=None, handoff=None, ledger=None, resync=None):
        self.count = 0
        self.manual = False
        self._primary = None  # weakref to the primary optimizer
        self._primary_id = 0
        self._last = None  # monotonic time of the previous step end
        self._clock = clock
        self._wall = wall
        # callable(optimizer or None) on the training thread: at a step of an optimizer other
        # than the previous step's, at a manual step, and at every step while ``discovering``
        self._on_boundary = on_boundary
        self.discovering = False
        self._last_optimizer = 0  # id of the previous step's optimizer
        self.reader = reader  # StatsReader or None: allocated after each step
        self._resync = resync  # callable(): note the gradients in the ledger (``ledger.countdown``)
        self.records: collections.deque = collections.deque(maxlen=MAX_PENDING)  # drained by the agent
        self.errors = 0
        self._phases = phases  # PhaseTracker or None: its readings go with each step record
        self._handoff = handoff  # Handoff or None: a sample the agent thread asked for
        self._ledger = ledger  # GradLedger or None: stale from a step's pre-hook (backward ran)
        self.last_duration: float | None = None  # seconds between the last two step ends
        self._hook_handle = None
        self._pre_handle = None
        # the pre-hook on every step (True: no registered model's forward marks the ledger
        # stale, so the step's pre-hook does); otherwise only before a step whose phases
        # are read -- a hook PyTorch calls costs the training thread even when it does nothing
        self.pre_every_step = True
        # callable() or None: work the agent thread left for the training thread's next step
        # boundary (hooking a new parameter layout, discovery); run once, then cleared
        self.due = None

    # -- hooks ----------------------------------------------------------------------
    def install(self) -> None:
        if self._hook_handle is not None:
            return
        from torch.optim.optimizer import register_optimizer_step_post_hook
        self._hook_handle = register_optimizer_step_post_hook(self._optimizer_hook)
        self.place_pre_hook()

    def place_pre_hook(self) -> None:
        """Training thread, between steps (never inside the optimizer's pre-hook loop):
        the pre-hook where the next step needs it, removed where it does not."""
        phases = self._phases
        want = self._hook_handle is not None and (self.pre_every_step or (phases is not None and (
            phases.enabled or phases.every <= KEEP_PRE_HOOK_EVERY)))
        if want and self._pre_handle is None:
            from torch.optim.optimizer import register_optimizer_step_pre_hook
            self._pre_handle = register_optimizer_step_pre_hook(self._optimizer_pre_hook)
        elif not want and self._pre_handle is not None:
            self._pre_handle.remove()
            self._pre_handle = None

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
            self._primary_id = id(optimizer)

    def _optimizer_hook(self, optimizer, args, kwargs) -> None:
        try:
            phases = self._phases
            if phases is not None and phases.enabled:
                phases.optimizer_post()
            key = id(optimizer)
            if key != self._primary_id:
                self.set_primary(optimizer)  # the first optimizer, or the primary one is gone
            if (key != self._last_optimizer or self.discovering) and self._on_boundary is not None:
                self._last_optimizer = key
                self._on_boundary(optimizer)
            if self.due is not None:
                self._run_due()
            ledger = self._ledger
            if ledger is not None:
                ledger.forward_pending = False  # a step: the backward before it is over
                if ledger.stale:
                    self._after_backward()
            if key == self._primary_id and not self.manual:
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
        if self.due is not None:
            self._run_due()
        if self._ledger is not None:
            self._ledger.forward_pending = False
        self._after_backward()
        self._mark("manual")
        handoff = self._handoff
        if handoff is not None and handoff.wanted:
            handoff.serve()

    def _run_due(self) -> None:
        due, self.due = self.due, None
        try:
            due()
        except Exception:
            self.errors += 1

    def _after_backward(self) -> None:
        """A step boundary: note the gradients in a stale ledger on every k-th step
        (agent/grads.py), and on this one when a sample waits for a hook."""
        ledger = self._ledger
        if ledger is not None and ledger.stale:
            ledger.countdown -= 1
            handoff = self._handoff
            if ledger.countdown <= 0 or (handoff is not None and handoff.wanted):
                self._resync()

    # -- records --------------------------------------------------------------------
    def _mark(self, source: str) -> None:
        now = self._clock()
        last, self._last = self._last, now
        duration = self.last_duration = None if last is None else now - last
        self.count += 1
        if last is None and self._handoff is not None:  # the first step: which thread trains
            self._handoff.main_thread_trains = threading.current_thread() is threading.main_thread()
        phases = self._phases
        devices = None
        reader = self.reader
        if reader is not None:
            # allocated right after this step: the phase hook's reading of this very update,
            # or one allocator counter read now (never rate-limited); and the rate-limited
            # full read where it is due (its peak since the previous one); the agent thread
            # builds the step item from these (agent/sampling.py)
            try:
                after = phases.after_step if phases is not None else None
                if after is None:
                    after = reader.raw_allocated()  # (not into the peak windows: cheap, every step)
                devices = (after, reader.try_read(STEP_READ) if now >= reader.due_at else None)
            except Exception:  # the step is still recorded, without its reading
                self.errors += 1
        seen = None
        if phases is not None:
            seen = phases.take(now, duration)
            if (self._pre_handle is not None) != (self.pre_every_step or phases.enabled
                                                  or phases.every <= KEEP_PRE_HOOK_EVERY):
                self.place_pre_hook()
        self.records.append((self.count, self._wall(), duration, source, devices, seen, now))
