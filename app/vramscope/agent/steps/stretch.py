"""A quiet stretch: a run of quiet steps counted in C, with no Python hook of the agent's.

On a quiet step (agent/steps/steps.py) the optimizer post-hook only counts the step
and notes its time, yet PyTorch calling a Python function for it costs ~8 us
a step after 2 ms of compute have evicted the caches: 0.5 % of a 2 ms step by
itself (bench/agent_thread_cost.py). When a full step plans two or more quiet
steps, the stretch takes the agent's Python out of those steps:

- the primary optimizer carries a per-optimizer step post-hook that is a C
  callable counting its calls: an uncached ``functools.lru_cache``
  (``maxsize=0``) around the builtin ``slice`` -- such a wrapper forwards each
  call and counts it as a miss (CPython's ``functools``, ``cache_info()``),
  hashing nothing. PyTorch calls an optimizer's own post-hooks before the
  global ones (``Optimizer.profile_hook_step``), so at the global hook the
  tally already holds the step being ended;
- the agent's entry in PyTorch's dict of global post-hooks keeps its key and
  takes another such tally as its value (``every``: a C call, nothing in
  Python), which counts every optimizer's steps. A value may change in place
  while PyTorch iterates over the dict, from any thread; a key may not come or
  go then;
- every optimizer the full hook has met carries a third tally (``known``), so
  a step of an optimizer the agent has not met -- a head's optimizer started
  inside a stretch -- is the difference (``unmet``): the agent thread then
  puts the full hook back, which meets that optimizer at its next step; until
  it is met, the samples' optimizer state is n/a with the reason
  (``unmet_seen``; agent/tensors/instant.py), never a figure without it;
- the backward watch counts the stretch down and puts the full hook back at
  the backward of its last step (agent/tensors/backward.py: where the agent wraps
  ``torch.autograd.backward``, the wrapper does at each backward's start,
  the thinned node hooks counting in C; else the node hook in Python), so that
  step ends the quiet run as before and the
  forward hooks are back before the next full step; a sample the agent thread
  asks for meanwhile waits for that step where it is near (``remaining``; a
  full step more per sample costs more than the stretch saves), else the
  agent thread puts the hook back at once (agent/measurer.py). It puts the
  hook back when a stretch outlives its expected length (the watched model
  stopped training: a second model trained in turn, its optimizer unseen while
  the stretch lasts);
- the full hook, back, reads the tally: every step of the primary optimizer
  since the stretch began, exactly (a GradScaler's skipped step runs no
  optimizer hook; gradient accumulation's extra backwards end the stretch
  early, the rest then runs as plain quiet steps; a backward the watch misses
  makes it longer) -- and records the steps before its own, their times spread
  evenly over the stretch. Between, ``StepTracker.count`` reads the tally, so
  a sample or an OOM mid-stretch carries the exact step.
"""

from __future__ import annotations

import functools
import threading
import weakref

# a stretch the node hook has not ended within this many times its expected length (and
# one agent interval more) is ended by the agent thread
STALE_FACTOR = 2.0
MAX_REMAINING = 1.0  # seconds: the most a sample waits for a stretch's end
MIN_STRETCH = 2  # quiet steps planned at least, for a stretch (one quiet step: the Python path)
# primary steps without a stretch after an optimizer not met stepped in one (its next step
# meets the full hook); then stretches run again, its state n/a until it is met
UNMET_WAIT = 16


def _new_tally():
    """A C callable taking the post-hook's (optimizer, args, kwargs) that counts its calls."""
    return functools.lru_cache(maxsize=0)(slice)


class QuietStretch:
    """The stretch's state, shared by the training thread (its hooks) and the agent thread
    (``live_count``, ``wake``, ``flush``); the ends are taken under ``lock``."""

    def __init__(self, watch=None):
        self.watch = watch  # BackwardWatch or None: counts the stretch down (``ticks``)
        self.lock = threading.Lock()
        # (steps recorded before it, the tally then, monotonic time of its last recorded step
        # or None once the agent thread recorded some, its start, seconds expected, the tally
        # at its start, the backwards it was planned for)
        self.active: tuple | None = None
        self.tally = None  # the primary optimizer's counting post-hook (see _new_tally)
        self._tally_handle = None
        self._tally_owner = 0  # id of the optimizer carrying the tally
        self._handle = None  # the agent's global post-hook handle (its dict and key)
        self._full = None  # the full hook, put back at the stretch's end
        self.every = _new_tally()  # the global hook's value in a stretch: every optimizer's steps
        self.known = _new_tally()  # carried by each optimizer the full hook has met
        self._known_set = weakref.WeakSet()  # those optimizers
        self._known_handles: list = []  # (their hooks' handles: off when the agent stops)
        self._marks = (0, 0)  # (``every``, ``known``) at the running stretch's start
        # an optimizer the agent has not met stepped inside a stretch; cleared at the primary
        # optimizer's full step after the full hook met a new one (``primary_step``)
        self.unmet_seen = False
        self._met_new = False
        self._unmet_wait = 0  # primary steps left without a stretch (UNMET_WAIT)
        self._seen: tuple = (0, None)  # (the tally, when the agent thread saw it move; ``stale``)
        self.stretches = 0  # stretches begun
        self.woken_by_agent = 0  # ended by the agent thread (past their expected end, or idle)

    # -- the training thread ------------------------------------------------------------
    def ready(self, optimizer, handle, full) -> bool:
        """Can a stretch begin on ``optimizer``'s steps? Puts the tally on it once."""
        watch = self.watch
        if handle is None or watch is None or not watch.ready:
            return False
        if self._tally_owner != id(optimizer) or self._tally_handle is None:
            self.drop_tally()
            self.tally = _new_tally()
            self._tally_handle = optimizer.register_step_post_hook(self.tally)
            self._tally_owner = id(optimizer)
        self._handle, self._full = handle, full
        return not (self.unmet_seen and self._unmet_wait)  # (its next step: the full hook)

    def meet(self, optimizer) -> None:
        """Training thread, in the full hook: ``optimizer`` steps there; it carries the
        ``known`` tally from now on (registered once; inside the global hooks' loop, past
        the optimizer's own hooks, as ``ready``)."""
        if optimizer is None or optimizer in self._known_set:
            return
        if len(self._known_handles) >= 64:  # (optimizers made anew each epoch: the gone ones' out)
            self._known_handles = [h for h in self._known_handles if h.hooks_dict_ref() is not None]
        try:
            self._known_handles.append(optimizer.register_step_post_hook(self.known))
            self._known_set.add(optimizer)
        except Exception:
            return
        if self.unmet_seen:
            self._met_new = True

    def carries(self, optimizer) -> bool:
        return optimizer is not None and optimizer in self._known_set

    def primary_step(self) -> None:
        """Training thread, at the primary optimizer's step: an optimizer not met inside a
        stretch has been met since the last one -- every optimizer that steps once an
        iteration has reached the full hook by now; else one step less to wait."""
        if self._met_new:
            self.unmet_seen = self._met_new = False
        elif self._unmet_wait:  # (an optimizer that stepped once and not since: stretches again)
            self._unmet_wait -= 1

    def unmet(self) -> int:
        """Steps inside the running stretch of optimizers the agent has not met (any thread;
        a known optimizer between its own tally and the global one reads one low)."""
        return max(0, self._unmet()) if self.active is not None else 0

    def _unmet(self) -> int:
        e0, k0 = self._marks
        return self.every.cache_info().misses - e0 - (self.known.cache_info().misses - k0)

    def begin(self, count: int, now: float, quiet: int, step_s: float | None) -> None:
        """After full step ``count`` (ended at ``now``), ``quiet`` quiet steps follow: the
        global hook's value becomes the ``every`` tally; the node hook counts down."""
        hooks = self._handle.hooks_dict_ref()
        if hooks is None or self._handle.id not in hooks:
            return
        m = self.tally.cache_info().misses
        self._marks = (self.every.cache_info().misses, self.known.cache_info().misses)  # (before ``active``)
        self.active = (count, m, now, now, quiet * (step_s or 0.0), m, quiet)
        self._seen = (m, None)
        self.stretches += 1
        hooks[self._handle.id] = self.every
        self.watch.ticks = quiet  # (the node hook wakes the full hook at the stretch's last step)

    def take(self, primary: bool, now: float, record, known: bool = False) -> int | None:
        """The full hook is back (training thread, inside it): end the stretch.
        ``record(base, k, t0, step)`` records the ``k`` steps after step ``base`` (the first
        ending at ``t0 + step``, each ``step`` seconds long; None: not known) before the
        stretch ends, so ``live_count`` never goes back. ``primary``: the current step is
        the primary optimizer's -- the tally holds it as its last; the caller counts it.
        ``known``: the current step's optimizer carries the ``known`` tally (this step is
        in it, but not in ``every``: the full hook is back).
        Returns k, -1 where the current step was recorded already (``flush`` on another
        thread between its tally and this hook), None where no stretch was running."""
        with self.lock:
            s = self.active
            if s is None:
                return None
            base, m0, t0 = s[0], s[1], s[2]
            n = self.tally.cache_info().misses - m0
            k = n - 1 if primary else n
            if k >= 0:
                record(base, k, t0, None if t0 is None else (now - t0) / (k + 1))
            if self._unmet() + (1 if known else 0) > 0:
                self.unmet_seen, self._unmet_wait = True, UNMET_WAIT
            self.active = None
            self.watch.ticks = 0
        return k

    # -- any thread ---------------------------------------------------------------------
    def live_count(self, count: int) -> int:
        """Steps so far (``count``: those recorded), the stretch's included."""
        s = self.active
        if s is None:
            return count
        return s[0] + self.tally.cache_info().misses - s[1]

    def caught_up(self) -> bool:
        """Every backward the node hook counted in this stretch was followed by its optimizer
        step (the tally): no backward is pending (what a quiet step's hook used to say
        by clearing ``forward_pending``). A backward is counted before it marks the ledger
        (the wrapper, at its start) or at its first gradient (a Python node hook), so a
        backward that has marked it is always counted here. False when not known."""
        s, watch = self.active, self.watch
        if s is None or watch is None:
            return False
        ticks = watch.ticks
        return ticks > 0 and self.tally.cache_info().misses - s[5] >= s[6] - ticks

    def wake(self) -> None:
        """The full hook back in PyTorch's dict (idempotent; safe on any thread, even while
        PyTorch iterates over the dict: a value changes, no key)."""
        handle, full = self._handle, self._full
        if handle is None or full is None:
            return
        hooks = handle.hooks_dict_ref()
        if hooks is not None and hooks.get(handle.id) is self.every:
            hooks[handle.id] = full

    # -- the agent thread ---------------------------------------------------------------
    def remaining(self, now: float) -> float:
        """Seconds until the running stretch's planned end (0: none runs), at most
        MAX_REMAINING: how much longer the agent thread waits for a sample it asks for."""
        s = self.active
        return 0.0 if s is None else min(MAX_REMAINING, max(0.0, s[3] + s[4] - now))

    def stale(self, now: float, slack: float) -> bool:
        """Past its expected end, or its optimizer idle: no step counted for ``STALE_FACTOR``
        of its steps' length (and ``slack``) since the agent thread last saw the tally move
        -- the watched model stopped training, and another may be training unseen."""
        s = self.active
        if s is None:
            return False
        if now - s[3] > STALE_FACTOR * s[4] + slack:
            return True
        misses = self.tally.cache_info().misses
        seen, at = self._seen
        if misses != seen or at is None:
            self._seen = (misses, now)
            return False
        return now - at > STALE_FACTOR * (s[4] / s[6] if s[6] else 0.0) + slack

    def flush(self, record) -> None:
        """Away from the optimizer hooks (the agent thread, a stretch past its end; the
        training thread, done training): record every step of the stretch so far (the
        hook of the last one, if it runs later, knows: ``take``). The stretch goes on; its
        steps' times are not known from here (None)."""
        with self.lock:
            s = self.active
            if s is None:
                return
            k = self.tally.cache_info().misses - s[1]
            if k <= 0:
                return
            record(s[0], k, None, None)
            self.active = (s[0] + k, s[1] + k, None, *s[3:])

    def drop_tally(self) -> None:
        if self._tally_handle is not None:
            try:
                self._tally_handle.remove()
            except Exception:
                pass
        self._tally_handle = None
        self._tally_owner = 0

    def drop_known(self) -> None:
        """The agent stops: the ``known`` tallies off every optimizer."""
        handles, self._known_handles = self._known_handles, []
        for handle in handles:
            try:
                handle.remove()
            except Exception:
                pass
        self._known_set = weakref.WeakSet()
