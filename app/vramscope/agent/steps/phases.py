"""Phases of a training step: allocated at the end of forward, after backward,
after the optimizer step -- and once, after loading.

Where to measure follows the shape of a step in PyTorch's memory snapshots
("Understanding CUDA Memory Usage", pytorch.org/docs/stable/torch_cuda_memory.html):
after loading, during the busiest forward pass, after backward and after the
optimizer step. The hooks that see those
moments are cheap and already on the training thread:

- forward pre-hook of a registered model (top module): the first one, before
  any step, is "after loading";
- forward post-hook: "forward" = allocated with the activations held;
- optimizer step pre-hook: "backward" = allocated after the backward pass (and
  whatever ran between it and the update, e.g. gradient clipping); post-hook:
  "optimizer";
- a forward under ``no_grad`` (an evaluation between steps): "eval", its own
  phase, in the record of the step that follows it;
- until a loop has shown an optimizer (and in loops without one, which call
  ``agent.step()``), the forward post-hook also hooks the output tensor, whose
  gradient arrives first in backward, and that hook queues a callback the
  autograd engine runs when the whole backward pass is done (the way DDP finds
  the end of backward): "backward" there. Once the optimizer pre-hook reads
  it, that per-step hook (some 10 us of the training thread's time) is left
  out.

Each reading is ``provider.allocated_peaks_now()``: the allocator's current
counter and its all-time peak per touched CUDA device, from one nested read
-- no synchronisation, no peak reset. Each phase's *peak* is the highest
allocated between the previous reading and its own: where the all-time
counter rose in between it is exact, otherwise it lies between the two
readings and the counter (a lower bound and an upper one, said so; the
step record's ``phase_peaks``). The
hooks only append the raw readings; the agent thread folds them into the
step record (agent/sampling.py): within one step the highest reading of
each phase is kept (several micro-batches), so the step record says which
phase peaks. A CPU-only run has no CUDA device: the phases are None and the
hooks skip the work.

Cost: the readings -- and the rest of a measured step's work in the
optimizer post-hook -- are timed in the training thread's own CPU time
(``time.thread_time``: a wait for the GIL or a descheduled thread is not the
agent's cost). The agent's whole share of a step is AGENT_BUDGET; the hooks
that run on every step, even a quiet one (agent/steps/steps.py), take about
STEP_FIXED_S of it; the measured steps share the rest. When the median cost
of the last COST_STEPS measured steps (so one slow reading does not switch
readings off for hundreds of steps) would exceed that rest, only every k-th
step is measured (the others report None, and run as quiet steps).
``measured_share`` says what share of the steps carried readings (the
sample items carry it to the monitor).
"""

from __future__ import annotations

import collections
import math
import time

from vramscope.agent.protocol import EventKind, Phase
from vramscope.agent.allocator.peak_window import current_of

# the agent's share of the training thread's CPU time per step, all hooks included (issue
# 23's budget is 1 %; the rest is margin for what the estimate below misses)
AGENT_BUDGET = 0.008
# what the hooks of every step cost, a quiet one included, on average: the backward wrapper's
# frame (~3-4 us; the watch's node hooks count in C once thinned, agent/tensors/backward.py), the samples handed to the training thread (~3 us a step at 2 ms steps),
# a quiet stretch's ends and the per-module samples (bench/agent_thread_cost.py) -- with
# margin: the quiet path this was first measured on (~8-10 us) now runs only where a stretch
# cannot (agent/steps/stretch.py), and 2 ms steps keep the measured steps at their floor; they share
# what is left (at least a tenth of the budget): at 50 ms steps a measured step (three
# readings of 20 us each, ~60 us a reading cold, and the post-hook's bookkeeping) fits on
# every step; at 2 ms steps they are thinned to a few per cent
STEP_FIXED_S = 18e-6
PHASE_BUDGET = AGENT_BUDGET  # (the name the tests and callers set: the agent's whole share)
FORWARD, BACKWARD, OPTIMIZER, EVAL = Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER, Phase.EVAL
START = ""  # (not a phase) the last reading before a step's first phase: where its stretch starts
RECHECK_EVERY = 2.0  # seconds: a run with no CUDA device looks again this often
COST_STEPS = 5  # the budget holds the median reading cost of this many measured steps


def _first_grad_tensor(output, depth: int = 0):
    """The first tensor in a model's output that autograd will reach in backward."""
    if depth > 3:
        return None
    requires = getattr(output, "requires_grad", None)
    if requires is not None:
        return output if requires and getattr(output, "grad_fn", None) is not None else None
    if isinstance(output, dict):  # also Hugging Face ModelOutput (an OrderedDict)
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        for item in output[:8]:
            t = _first_grad_tensor(item, depth + 1)
            if t is not None:
                return t
    return None


class PhaseTracker:
    def __init__(
        self,
        read_allocated,
        emit,
        clock=time.monotonic,
        wall=time.time,
        budget: float = PHASE_BUDGET,
        name=str,
        cpu_clock=time.thread_time,
    ):
        self.budget = budget  # the agent's share of step time (STEP_FIXED_S of it on every step)
        self.read = read_allocated  # () -> {device index: bytes} (empty: no CUDA device touched)
        self._name = name  # device index -> the agent's device name
        self._emit = emit  # emit(kind, data): the "loaded" event
        self._clock = clock
        self._cpu = cpu_clock  # the cost of the readings: this thread's CPU time
        self._wall = wall
        self._costs: collections.deque = collections.deque(maxlen=COST_STEPS)
        self.steps_seen = 0  # steps that ended while a CUDA device was there to read
        self.steps_measured = 0
        self.loaded_done = False
        self.enabled = True  # False: a CPU-only run (no device to read) or a skipped step
        self._every = 1
        self._skip = 0
        self._cost = 0.0
        self._seen: list = []  # this step's readings: (phase, wall time, {device: bytes}), in order
        self._last: tuple | None = None  # the previous measured step's last reading (START)
        self._backward_queued = False
        self._backward_seen = False
        self._queue_callback = None
        self._nothing_at: float | None = None  # when a read last found no CUDA device
        self.after_step: dict[int, int] | None = None  # this step's reading after the update
        self.optimizer_seen = False  # an optimizer pre-hook ran: "backward" is read there
        self.errors = 0
        self.reads = 0
        self.last_cost = 0.0  # CPU seconds of the last reading
        self.set_aside = 0.0  # seconds per step other per-step readings take (agent/steps/after_step.py)

    # -- readings --------------------------------------------------------------------
    def _note(self, phase: str) -> None:
        c0 = self._cpu()
        t0 = self._clock()
        values = self.read()
        self.reads += 1
        if values:
            seen = self._seen
            if not seen and self._last is not None:
                seen.append(self._last)
            seen.append((phase, t0, values))  # (t0 on the step tracker's clock)
            if phase is OPTIMIZER:
                self.after_step = values
        else:
            self.enabled = False  # nothing to read (no CUDA device yet): look again later
            self._nothing_at = t0
        self.last_cost = max(self._cpu() - c0, 1e-9)
        self._cost += self.last_cost  # (>0: "this step read something")

    def mark_loaded(self, steps_done: int) -> None:
        """Before the first forward of the run: what loading left allocated."""
        if self.loaded_done:
            return
        self.loaded_done = True
        if steps_done:
            return  # registered mid-run: the moment after loading has passed
        try:
            values = self.read()
        except Exception:
            self.errors += 1
            return
        self._emit(
            EventKind.LOADED,
            {
                "devices": {self._name(d): current_of(v) for d, v in (values or {}).items()},
                "text": "allocated after loading, before the first forward",
            },
        )
        if not values:
            self.enabled = False
            self._nothing_at = self._clock()

    # -- hooks (training thread) -----------------------------------------------------
    def forward_end(self, output) -> None:
        """End of a registered model's forward."""
        if not self.enabled:
            return
        try:
            self._note(FORWARD)
            if not self.optimizer_seen:  # no optimizer pre-hook to read "backward": autograd's end
                t = _first_grad_tensor(output)
                if t is not None:
                    t.register_hook(self._output_grad)
        except Exception:
            self.errors += 1

    def eval_end(self) -> None:
        """End of a registered model's forward under no_grad: an evaluation pass (its
        own phase, in the record of the step that follows it)."""
        if not self.enabled:
            return
        try:
            self._note(EVAL)
        except Exception:
            self.errors += 1

    def _output_grad(self, grad):
        # the engine calls this (GIL held) before it reaches any of the model's parameters
        try:
            if not self._backward_queued:
                queue = self._queue_callback
                if queue is None:
                    from torch.autograd import Variable

                    queue = self._queue_callback = Variable._execution_engine.queue_callback
                self._backward_queued = True
                queue(self._backward_end)
        except Exception:
            self.errors += 1
        return None

    def _backward_end(self) -> None:
        self._backward_queued = False
        try:
            self._backward_seen = True
            if self.enabled:
                self._note(BACKWARD)
        except Exception:
            self.errors += 1

    def optimizer_pre(self) -> None:
        self.optimizer_seen = True
        if not self.enabled or self._backward_seen:
            return
        try:
            self._note(BACKWARD)  # after backward, just before the update
        except Exception:
            self.errors += 1

    def optimizer_post(self) -> None:
        if not self.enabled:
            return
        try:
            self._note(OPTIMIZER)
        except Exception:
            self.errors += 1

    # -- step boundary -----------------------------------------------------------------
    def take(
        self, now: float, duration: float | None, overhead: float = 0.0, cpu_step: float | None = None
    ) -> list | tuple:
        """At a step's end (``now``: the step tracker's clock, ``duration``: the step's):
        its readings [(phase, time on that clock, {device index: bytes})] in hook order
        (empty: not measured); the agent thread folds them (agent/sampling.py);
        ``overhead``: the CPU time the step hook spent on this measured step besides the
        readings (part of its cost); ``cpu_step``: the training thread's CPU time per step
        lately, what the budget is a share of (else the step's wall time). Decides
        whether the next step is measured; a skipped step only counts down."""
        if not self._cost:  # nothing was read: a skipped step
            self._last = None
            if self._backward_seen:
                self._backward_seen = False
            if self._nothing_at is None:
                self.steps_seen += 1
            if self._nothing_at is not None:  # no CUDA device: look again now and then
                if now - self._nothing_at >= RECHECK_EVERY:
                    self._nothing_at = None
                    self.enabled = True
            else:
                self._skip -= 1
                if self._skip <= 0:
                    self.enabled = True
            return ()
        seen, self._seen = self._seen, []
        self._last = (START, seen[-1][1], seen[-1][2]) if seen else None
        if seen:
            self.steps_seen += 1
            self.steps_measured += 1
        costs = self._costs
        costs.append(self._cost + overhead)
        cost = sorted(costs)[(len(costs) - 1) // 2]
        step = cpu_step or duration
        if step:  # (at most twice as few steps measured per measured step: a quick recovery)
            fixed = STEP_FIXED_S + self.set_aside  # (every step's share, the quiet steps' reads too)
            left = max(self.budget / 10, self.budget - fixed / step)  # for the measured steps
            self._every = max(1, min(math.ceil(cost / (left * step)), 2 * self._every))
        self._cost = 0.0
        self.after_step = None
        self._backward_seen = False
        if self._nothing_at is not None:
            self.enabled = False
        elif self._every > 1:
            self.enabled = False
            self._skip = self._every - 1
        else:
            self.enabled = True
        return seen

    def passed(self, n: int) -> None:
        """``n`` steps passed unread without calling ``take`` (the step tracker's quiet
        steps): counted as ``take`` would have counted them; the readings resume when
        the skip is over."""
        if self._nothing_at is None:
            self.steps_seen += n
            self._skip -= n
            if self._skip <= 0:
                self.enabled = True

    @property
    def has_device(self) -> bool:
        """The last reading found a device (quiet steps need no look for one)."""
        return self._nothing_at is None

    @property
    def skip_left(self) -> int:
        """Unread steps ahead before the readings resume."""
        return self._skip

    @property
    def every(self) -> int:
        return self._every

    @property
    def measured_share(self) -> float | None:
        """Share of the steps (with a device to read) that carried phase readings."""
        return self.steps_measured / self.steps_seen if self.steps_seen else None
