"""Allocated after every optimizer step, where the CPU-time budget holds one more read.

The leak and growth rules read "allocated right after the step" (core/detectors).
A full step takes it with its phase readings (agent/steps/phases.py); a *quiet* step
(agent/steps/steps.py) only counts -- and a run of quiet steps (a quiet stretch,
agent/steps/stretch.py) runs no Python of the agent's at all, so it has no reading.
The allocator's counter is one read (``StatsReader.raw_allocated``), but a
read is what a hook costs most: ~20 us on a GPU, 1 % of a 2 ms step by
itself. So the quiet steps read it when the read and the Python post-hook
PyTorch then calls (QUIET_PATH_S, bench/agent_thread_cost.py) fit in
AFTER_SHARE of the training thread's CPU time per step; then no quiet stretch
runs (it would have no reading), and the phase budget sets that cost aside
(``extra``). Where it does not fit (short steps, a slow read), the quiet steps
say None -- never a stale figure -- and the share of steps with a reading
(``share``) says how many carry one.
"""

from __future__ import annotations

QUIET_PATH_S = 10e-6  # the quiet post-hook's Python call on a 2 ms step (cold caches; ~8-10 us)
AFTER_SHARE = 0.004  # of the step's CPU time: the quiet steps' after-step read and their hook


class AfterStepReads:
    __slots__ = ("share_budget", "on", "read", "errors", "_cost")

    def __init__(self, share: float = AFTER_SHARE):
        self.share_budget = share
        self.on = False  # quiet steps read allocated after the update (and run no stretch)
        self.read = None  # () -> {device index: bytes or (bytes, peak)} (the reader's raw read)
        self.errors = 0
        self._cost = 0.0  # what ``on`` costs a step, as planned

    def plan(self, cpu_step: float | None, read_cost: float) -> bool:
        """At a full step: can the quiet steps ahead read? ``cpu_step``: the training
        thread's CPU time per step lately; ``read_cost``: the last reading's CPU time."""
        cost = QUIET_PATH_S + read_cost
        self.on = bool(
            cpu_step and read_cost and self.read is not None and cost <= self.share_budget * cpu_step
        )
        self._cost = cost if self.on else 0.0
        return self.on

    @property
    def extra(self) -> float:
        """Seconds a quiet step's reading costs (0: off): the phase budget's set-aside."""
        return self._cost

    def take(self):
        """A quiet step's reading (training thread, in the post-hook), or None."""
        try:
            return self.read() or None
        except Exception:
            self.errors += 1
            return None
