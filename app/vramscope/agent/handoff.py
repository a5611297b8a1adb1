"""Who takes a sample: the agent thread, or the training thread at its next hook.

The agent thread takes a sample itself when the gradient ledger is current
(agent/grads.py): all it reads then -- the allocator, the weights and buffers,
the optimizer state, the ledger's integers -- is safe to read from a second
thread. While the ledger is stale (a training forward ran, and its backward
makes gradients the ledger has not seen) it asks instead, and the next hook
the training thread runs -- a registered model's forward pre/post hook, the
optimizer step pre/post hook, ``agent.step()`` -- takes the sample right
there, where ``.grad`` may be read: the figures are exact at that instant,
whatever phase of the step it falls in. A hook pays one attribute read while
nothing is asked.

If no hook comes within the wait (a few step times: the training thread is
idle, or busy without hooks), the agent thread withdraws the request and
samples itself, with the gradients "not known" rather than stale.
"""

from __future__ import annotations

import threading


class Handoff:
    __slots__ = ("wanted", "deadline", "served", "_lock", "_take")

    def __init__(self, take):
        self.wanted = False  # hooks read only this while nothing is asked
        self.deadline = 0.0  # monotonic time after which the agent thread samples itself
        self.served = 0  # samples the training thread took
        self._lock = threading.Lock()
        self._take = take  # () -> None: one sample on the calling (training) thread

    def ask(self, deadline: float) -> None:
        """Agent thread: the next training hook should take a sample."""
        self.deadline = deadline
        self.wanted = True

    def serve(self) -> None:
        """Training thread, at a hook, when ``wanted``: take the sample here."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if not self.wanted:
                return
            self.wanted = False
        finally:
            self._lock.release()
        self.served += 1
        self._take()

    def withdraw(self) -> bool:
        """Agent thread, past the deadline: True when no hook took the sample (nor will)."""
        with self._lock:
            was, self.wanted = self.wanted, False
        return was
