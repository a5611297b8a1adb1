"""A budget of seconds per window, for slow questions asked during a sampling pass.

A runtime's API socket or a scheduler's command that answers every request
slowly (within its timeout) must not stall a pass that meets many new
containers or jobs: at most ``seconds`` of such requests are made per
``window``; what is not asked yet is asked in a later window. A source that
failed is left alone for ``retry_after`` seconds (``down`` / ``is_down``), so a
dead daemon or a missing command costs nothing per pass.
"""

from __future__ import annotations

import time


class TimeBudget:
    def __init__(
        self, seconds: float = 1.0, window: float = 10.0, retry_after: float = 60.0, clock=time.monotonic
    ):
        self.seconds, self.window, self.retry_after = seconds, window, retry_after
        self.clock = clock
        self._window_start, self._spent = float("-inf"), 0.0
        self._down: dict[str, float] = {}  # source -> until when it is left alone

    def allows(self) -> bool:
        """Whether a request may be made now (a new window starts when the last is over)."""
        now = self.clock()
        if now - self._window_start > self.window:
            self._window_start, self._spent = now, 0.0
        return self._spent < self.seconds

    def spend(self, since: float) -> None:
        """Count the time from ``since`` (a ``clock()`` reading) to now."""
        self._spent += self.clock() - since

    def down(self, source: str) -> None:
        self._down[source] = self.clock() + self.retry_after

    def up(self, source: str) -> None:
        self._down.pop(source, None)

    def is_down(self, source: str) -> bool:
        return self.clock() < self._down.get(source, float("-inf"))

    def any_down(self) -> bool:
        now = self.clock()
        return any(now < until for until in self._down.values())
