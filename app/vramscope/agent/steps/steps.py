"""Training steps: counted from optimizer hooks, or from ``agent.step()``.

A global optimizer step post-hook (``torch.optim.optimizer.
register_optimizer_step_post_hook``) sees every ``optimizer.step()``. The
first optimizer that steps (or the first one registered) is the *primary*
one: its steps are the training steps, so a GAN's two optimizers do not
count each iteration twice. Once the user calls ``agent.step()`` the manual
calls define the steps and the hooks only mark step boundaries.

The hook runs on the training thread, so it does almost nothing. On a
*quiet* step -- one whose phases are not read (the CPU-time budget,
agent/steps/phases.py), with no gradient noting due, no sample asked for, the same
optimizer as the step before -- it counts the step, reads the clocks and
appends the step's time: a counter and a flag check. The other steps also
take the allocator reading after the update (the phase hook's), a
rate-limited full read (non-blocking), the gradient ledger's noting where it
is due, and decide how many quiet steps follow. Two or more quiet steps in a
row run as a *quiet stretch* (agent/steps/stretch.py): counted by a C tally on the
primary optimizer, with no Python hook of the agent's at all, and recorded as
one run when the stretch ends. The agent thread drains the records and turns
them into step items. Both optimizer hooks and
``agent.step()`` are also where the training thread takes a sample the agent
thread asked for (agent/steps/handoff.py).
"""

from __future__ import annotations

import collections
import threading
import time
import weakref

from vramscope.agent.steps.after_step import AfterStepReads
from vramscope.agent.protocol import ItemKind
from vramscope.agent.steps.step_hooks import StepHooks
from vramscope.agent.steps.step_stretches import StretchSteps
from vramscope.agent.steps.stretch import MIN_STRETCH, QuietStretch

MAX_PENDING = 65536  # step records waiting for the agent thread (bounded)
STEP_READ = ItemKind.STEP  # (looked up once: the step hook reads the allocator for this consumer)


class StepTracker(StepHooks, StretchSteps):
    """Counts the training steps (see the module doc); its hooks' placement in PyTorch's
    dicts: agent/steps/step_hooks.py; a quiet stretch's steps recorded: agent/steps/step_stretches.py."""

    def __init__(
        self,
        on_boundary=None,
        reader=None,
        clock=time.monotonic,
        wall=time.time,
        phases=None,
        handoff=None,
        ledger=None,
        resync=None,
    ):
        self._count = 0  # steps recorded (``count``: a quiet stretch's steps included)
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
        self._pre_on = False  # the pre-hook is in PyTorch's dict of global step pre-hooks
        # the pre-hook on every step (True: no registered model's forward marks the ledger
        # stale, so the step's pre-hook does); otherwise only before a step whose phases
        # are read -- a hook PyTorch calls costs the training thread even when it does nothing
        self.pre_every_step = True
        # callable() or None: work the agent thread left for the training thread's next step
        # boundary (hooking a new parameter layout, discovery); run once, then cleared
        self.due = None
        self.quiet = 0  # steps ahead that only count (see the module doc); 0: the next is full
        self._quiet_id = 0  # id of the optimizer whose steps may be quiet (the primary one)
        self._quiet_passed = 0  # quiet steps since the last full one
        self._run_last = None  # monotonic time of a stretch's last recorded step (None: not known)
        self._hushed = False  # the hooks a quiet step does not need are out (``hush``)
        self._cpu = time.thread_time  # this thread's CPU time: a measured step's cost
        self._step_cpu = 0.0  # CPU time at the start of this full step's hook
        self._cycle = 0.0  # the hooks' CPU time since the last measured step, outside the readings
        self._cpu_mark: tuple = (0, None)  # (step count, CPU time) at the last full step
        # callable(bool) or None: take the per-step hooks a quiet step does not need out
        # (True) / put them back (False) -- the models' forward post-hooks (agent/modules/model_hooks.py)
        self.on_quiet = None
        # callable(optimizer, args, kwargs) or None: run at the end of each full step's hook
        # (the module sampler's step end, agent/modules/module_sampler.py)
        self.after_full = None
        # callable() -> int or None: at most how many quiet steps may follow this one
        self.quiet_cap = None
        # quiet steps counted in C, the post-hook out of Python (agent/steps/stretch.py; its ``watch``,
        # the backward watch, is set by the agent)
        self.stretch = QuietStretch()
        # quiet steps' allocated-after-the-step reading, where the budget holds it (agent/steps/after_step.py)
        self.after = AfterStepReads()

    @property
    def count(self) -> int:
        """Steps so far (any thread): those recorded and a quiet stretch's."""
        return self.stretch.live_count(self._count)

    @count.setter
    def count(self, value: int) -> None:
        self._count = value

    def _optimizer_pre_hook(self, optimizer, args, kwargs) -> None:
        try:
            if self._ledger is not None:
                self._ledger.stale = True  # the backward before this step made gradients
            phases = self._phases
            if phases is not None:
                phases.optimizer_seen = True
                if phases.enabled:
                    phases.optimizer_pre()
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
        if self.stretch.active is not None and self._end_stretch(optimizer):
            return  # (this step was recorded with the stretch's)
        q = self.quiet
        if q and id(optimizer) == self._quiet_id and not self._handoff.wanted:
            # a quiet step: count it and note its time, nothing more
            self.quiet = q - 1
            self._quiet_passed += 1
            now = self._clock()
            last, self._last = self._last, now
            duration = self.last_duration = None if last is None else now - last
            self._count += 1
            self._ledger.forward_pending = False  # a step: the backward before it is over
            if self.stretch.unmet_seen:  # (an optimizer met since: agent/steps/stretch.py)
                self.stretch.primary_step()
            devices = None
            if self.after.on:  # allocated right after this update
                after = self.after.take()
                devices = (after, None) if after else None
            self.records.append((self._count, self._wall(), duration, "optimizer", devices, (), now))
            if q == 1:  # the next step is a full one (its phases read, as a rule): its hooks back
                self._quiet_over()
            return
        self.quiet = 0  # (a full step plans the next quiet ones)
        self._step_cpu = self._cpu()
        if self._hushed:
            self.hush(False)
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
            stretch = self.stretch  # (an optimizer not met inside a stretch: agent/steps/stretch.py)
            if key == self._primary_id:
                stretch.primary_step()
            stretch.meet(optimizer)
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
            if self.after_full is not None:
                c0 = self._cpu()
                self.after_full(optimizer, args, kwargs)
                self._cycle += self._cpu() - c0  # (the phase budget sees what a full step costs)
        except Exception:  # never break the user's step
            self.errors += 1

    def manual_step(self) -> None:
        self.end_stretch_here()
        self.manual = True
        self._step_cpu = self._cpu()
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
        (agent/tensors/grads.py), and on this one when a sample waits for a hook."""
        ledger = self._ledger
        if ledger is not None and ledger.stale:
            ledger.countdown -= 1
            handoff = self._handoff
            if ledger.countdown <= 0 or (handoff is not None and handoff.wanted):
                self._resync()

    # -- records --------------------------------------------------------------------
    def _mark(self, source: str) -> None:
        # (the wall clock read with the monotonic one: the step's time is when it ended, not
        # when the readings below were done -- a stretch's steps after it are timed from
        # ``now``, and must not come out earlier than this step)
        now, wall = self._clock(), self._wall()
        last, self._last = self._last, now
        duration = self.last_duration = None if last is None else now - last
        self._count += 1
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
                # (the phase hook's reading; a step whose phases are not read has none: the
                # allocator read is the costly part of a hook, kept to the budgeted steps)
                after = phases.after_step if phases is not None else None
                if after is None and (phases is None or phases.enabled or self.after.on):  # (read now)
                    after = reader.raw_allocated()
                full = reader.try_read(STEP_READ) if now >= reader.due_at else None
                devices = (after, full) if after or full else None
            except Exception:  # the step is still recorded, without its reading
                self.errors += 1
        seen = None
        if phases is not None:
            read = phases.enabled  # (this step's phases were read)
            passed, self._quiet_passed = self._quiet_passed, 0
            if passed:
                phases.passed(passed)
            # the measured steps' cost for the phase budget: their readings and what the hooks
            # spent outside them since the last measured step (full steps, putting hooks back)
            cpu = self._cpu()
            spent = cpu - self._step_cpu
            overhead = 0.0
            if read:
                overhead, self._cycle = max(0.0, self._cycle + spent - phases.last_cost), 0.0
            else:
                self._cycle += spent
            # the training thread's CPU time per step since the last full step (the budget's
            # base: a step's wall time also holds waits for the CPU on a busy machine)
            count0, cpu0 = self._cpu_mark
            count = self._count
            self._cpu_mark = (count, cpu)
            cpu_step = (cpu - cpu0) / (count - count0) if cpu0 is not None and count > count0 else None
            if self.after.plan(cpu_step, phases.last_cost):  # the quiet steps ahead read too:
                phases.set_aside = self.after.extra  # (their cost comes off the readings' share)
            else:
                phases.set_aside = 0.0
            seen = phases.take(now, duration, overhead, cpu_step)
            if self._pre_on != self._pre_wanted():
                self.place_pre_hook()
        self.records.append((self._count, wall, duration, source, devices, seen, now))
        c0 = self._cpu()
        self._plan_quiet(source, now)
        self._cycle += self._cpu() - c0

    def _plan_quiet(self, source: str, now: float) -> None:
        """After a full step: how many of the next steps only count -- up to the next
        one whose phases are read; none while discovery runs, work is due, or the steps
        are the user's own."""
        phases, ledger = self._phases, self._ledger
        q = 0
        if (
            source == "optimizer"
            and not self.discovering
            and self.due is None
            and phases is not None
            and ledger is not None
            and self._handoff is not None
            and self._last_optimizer == self._primary_id
            and not phases.enabled
            and phases.has_device
        ):
            q = phases.skip_left
            cap = self.quiet_cap() if self.quiet_cap is not None and q > 0 else None
            if cap is not None:
                q = min(q, cap)
        self._quiet_id = self._primary_id
        self.quiet = max(0, q)
        if self.quiet:
            self.hush(True)
            if self.quiet >= MIN_STRETCH and not self.after.on:  # (a stretch reads nothing)
                primary = self._primary() if self._primary is not None else None
                stretch = self.stretch
                if primary is not None and stretch.ready(primary, self._hook_handle, self._optimizer_hook):
                    stretch.begin(self._count, now, self.quiet, self.last_duration)
