"""How many frames a stream reader has taken in, and a wait for the next: the
window's sampler process (sources/remote/local_sampler.py) and the passes over
``--host`` machines (sources/remote/hosts.py) take each frame as it comes --
a frame read just before the next one arrives is a whole interval old."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

WAIT_LOOK = 2.0  # seconds: frames and a stream going down wake a wait; this is a safety net


class FrameArrivals:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.count = 0  # frames read since the start

    def one(self) -> None:
        """A frame came (or a message standing for one: a first look, a refused frame)."""
        with self._cond:
            self.count += 1
            self._cond.notify_all()

    def wake(self) -> None:
        """The stream went down or closed: a wait under way asks ``go_on`` now."""
        with self._cond:
            self._cond.notify_all()

    def wait_after(self, after: int, timeout: float, go_on: Callable[[], bool]) -> bool:
        """Until a frame later than the ``after``-th came (True), ``go_on()`` says the
        stream will send none, or the timeout (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.count <= after:
                left = deadline - time.monotonic()
                if left <= 0 or not go_on():
                    return False
                self._cond.wait(min(left, WAIT_LOOK))
            return True
