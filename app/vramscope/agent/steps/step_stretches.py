"""A quiet stretch's steps recorded by the step tracker (agent/steps/steps.py, agent/steps/stretch.py).

The stretch counts its steps in C; here they become step records: at its
end in the full post-hook back (``_end_stretch``), when training stops or goes
on by hand (``end_stretch_here``), when the agent thread finds it past its
expected end (``check_stretch``) -- one run record per stretch, which the
agent thread expands (``run_records``).
"""

from __future__ import annotations


class StretchSteps:
    """Mixed into StepTracker (agent/steps/steps.py), whose ``__init__`` sets the state used here."""

    @staticmethod
    def run_records(run: tuple):
        """A stretch's run record (``_record_run``) -> the step records of its steps."""
        base, k, t1, step, offset = run
        for i in range(k):
            t = t1 if step is None else t1 + i * step
            yield (base + 1 + i, t + offset, step, "optimizer", None, (), t)

    def _quiet_over(self) -> None:
        """The last quiet step before a full one: the quiet steps passed to the phase
        budget, the hooks back."""
        c0 = self._cpu()
        passed, self._quiet_passed = self._quiet_passed, 0
        self._phases.passed(passed)
        self.hush(False)
        self._cycle += self._cpu() - c0

    def _end_stretch(self, optimizer) -> bool:
        """Training thread, in the full post-hook back after a stretch: record the
        stretch's steps before this one; this one goes on as a quiet step (or a full one
        where the stretch had more steps than planned, or another optimizer steps).
        True: this step was recorded already (nothing more to do for it)."""
        try:
            c0 = self._cpu()
            now = self._clock()
            stretch = self.stretch
            k = stretch.take(
                id(optimizer) == self._quiet_id, now, self._record_run, stretch.carries(optimizer)
            )
            if k is None:
                return False
            self._cycle += self._cpu() - c0  # (a stretch's end: part of the measured steps' cost)
            self._last = self._run_last  # (None: a flush on another thread took its last steps)
            self._ledger.forward_pending = False  # a step: the backward before it is over
            if k < 0:
                if not self.quiet:
                    self._quiet_over()
                return True
        except Exception:
            self.errors += 1
        return False

    def _record_run(self, base: int, k: int, t0: float | None, step: float | None) -> None:
        """Record steps ``base + 1`` .. ``base + k`` of a stretch (under its lock; either
        thread): the first ends at ``t0 + step``, each ``step`` long (None: not known)."""
        if k:  # one record for the run (the agent thread expands it: ``run_records``)
            now, wall = self._clock(), self._wall()
            t1 = now if t0 is None else t0 + step
            self.records.append((base, k, t1, step, wall - now))
        self._count = base + k
        self._quiet_passed += k
        self.quiet = max(0, self.quiet - k)
        self._run_last = None if t0 is None else t0 + k * step
        if step is not None and k:
            self.last_duration = step

    def end_stretch_here(self) -> None:
        """Training is over or goes on by hand (``agent.step()``, the agent stopping):
        every step of a stretch recorded, the full hook back."""
        stretch = self.stretch
        if stretch.active is None:
            return
        stretch.wake()
        self.flush_stretch()
        self._end_stretch(None)

    def check_stretch(self, now: float, slack: float) -> None:
        """Agent thread, each interval: a stretch past its expected end (the watched model
        stopped training, its backward unseen) ends; its steps so far are recorded. A
        stretch in which an optimizer the agent has not met stepped ends at the next step."""
        stretch = self.stretch
        if stretch.stale(now, slack):
            stretch.woken_by_agent += 1
            stretch.wake()
            self.flush_stretch()
        elif stretch.unmet():  # an optimizer not met stepped: its next step meets the full hook
            stretch.woken_by_agent += 1
            stretch.wake()

    def flush_stretch(self) -> None:
        """Any thread away from the optimizer hooks: record a running stretch's steps so
        far (their times not known); the stretch goes on."""
        self.stretch.flush(self._record_run)
