"""Who takes a sample: the agent thread, or the training thread.

The agent thread takes a sample itself when the gradient ledger is current
(agent/tensors/grads.py): all it reads then -- the allocator, the weights and buffers,
the optimizer state, the ledger's integers -- is safe to read from a second
thread. While the ledger is stale (a training forward ran, and its backward
makes gradients the ledger has not seen) it asks the training thread
instead, which takes the sample where ``.grad`` may be read, so the figures
are exact at that instant:

- at the next hook it runs -- a registered model's forward post-hook, the
  optimizer step pre/post hook, ``agent.step()``; a hook pays one attribute
  read while nothing is asked;
- or, when the training thread is the main thread (the usual script), it
  notes the gradients at its next Python statement -- ``Py_AddPendingCall``
  (CPython's C API, through ctypes) runs a function on the main thread
  between two bytecodes, never inside a C call such as a gradient being
  freed -- and when no forward's backward is pending that makes the ledger
  current, so the agent thread samples itself. That covers the time after
  training (checkpointing, evaluation without the model's hooks, a script
  waiting for something) when no hook comes. Only the gradients are read
  there: no lock is taken, whatever the main thread was doing.

If neither comes within the wait (a few step times: the training thread is
inside one long C call, or trains off the main thread without hooks for a
while), the agent thread withdraws the request and samples itself, with the
gradients "not known" rather than stale.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import weakref

_PENDING_CALL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_waiting: dict[int, weakref.ref] = {}  # token -> the Handoff that asked (a weak reference)
_tokens = itertools.count(1)


def _run_pending(token) -> int:
    """On the main thread, between two statements: note the gradients for the handoff
    that asked."""
    ref = _waiting.pop(token or 0, None)
    handoff = ref() if ref is not None else None
    if handoff is not None:
        handoff.pending_call = False
        try:
            if handoff.wanted:
                handoff.note()
        except Exception:
            pass
    return 0


# one callback for the module's lifetime: a ctypes callback must outlive every call into it
_RUN_PENDING = _PENDING_CALL(_run_pending)


class Handoff:
    __slots__ = (
        "wanted",
        "deadline",
        "served",
        "main_thread_trains",
        "pending_call",
        "_lock",
        "_take",
        "note",
        "__weakref__",
    )

    def __init__(self, take, note=None):
        self.wanted = False  # hooks read only this while nothing is asked
        self.deadline = 0.0  # monotonic time after which the agent thread samples itself
        self.served = 0  # samples the training thread took
        self.main_thread_trains = False  # the training thread's hooks ran on the main thread
        self.pending_call = False  # a call to the main thread is queued
        self._lock = threading.Lock()
        self._take = take  # () -> None: one sample on the calling (training) thread
        self.note = note  # () -> None: note the gradients on the main thread (ledger only)

    def ask(self, deadline: float) -> None:
        """Agent thread: the training thread should take a sample (a hook, or the main
        thread's next statement)."""
        self.deadline = deadline
        self.wanted = True
        if self.main_thread_trains and not self.pending_call and self.note is not None:
            self._call_on_main_thread()

    def serve(self) -> None:
        """Training thread, at a hook (or a statement boundary), when ``wanted``: take
        the sample here."""
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
        """Agent thread, past the deadline: True when nobody took the sample (nor will)."""
        with self._lock:
            was, self.wanted = self.wanted, False
        return was

    def _call_on_main_thread(self) -> None:
        api = getattr(ctypes, "pythonapi", None)
        if api is None:
            return
        token = next(_tokens)
        _waiting[token] = weakref.ref(self)
        self.pending_call = True
        try:
            queued = api.Py_AddPendingCall(_RUN_PENDING, ctypes.c_void_p(token)) == 0
        except Exception:
            queued = False
        if not queued:  # (the queue is full, or no such function): no call comes
            _waiting.pop(token, None)
            self.pending_call = False
