"""Who is told of each stored frame, in which order, and what they failed at.

Listeners run on the sampler thread after every append, in the order of their
stage (``STAGES``: labels, then diagnostics, then the recorder that journals the
diagnostics' alerts, then anything else), whatever the order they subscribed in.
A listener that raises is isolated: the others still run, the failure is counted
and kept until the pipeline attaches it to the next frame (``take_failures``), so
the window shows it instead of freezing on the last frame.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from vramscope.core.samples import Frame

log = logging.getLogger(__name__)

Listener = Callable[[Frame], None]

# The stage order of the listeners (see the module text).
STAGE_LABELS = "labels"
STAGE_DIAGNOSTICS = "diagnostics"
STAGE_RECORDER = "recorder"
STAGE_OTHER = "other"
STAGES = (STAGE_LABELS, STAGE_DIAGNOSTICS, STAGE_RECORDER, STAGE_OTHER)
KEPT_FAILURES = 16  # the newest failures kept until taken


@dataclass(frozen=True, slots=True)
class ListenerFailure:
    """One listener call that raised."""

    stage: str
    listener: str
    message: str
    time: float

    def text(self) -> str:
        return f"{self.listener} ({self.stage}) failed: {self.message}"


def listener_name(listener) -> str:
    owner = getattr(listener, "__self__", None)
    if owner is not None:
        return type(owner).__name__
    return getattr(listener, "__qualname__", None) or type(listener).__name__


class Listeners:
    """The store's listeners by stage, and the failures not yet taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[tuple[int, str, Listener]] = []  # sorted by stage
        self._failures: list[ListenerFailure] = []  # not yet taken
        self.listener_failures = 0  # ever

    def subscribe(self, listener: Listener, stage: str = STAGE_OTHER) -> None:
        """Called on the sampler thread after every append, in stage order (``STAGES``)."""
        if stage not in STAGES:
            raise ValueError(f"unknown listener stage {stage!r}; one of {STAGES}")
        with self._lock:
            self._listeners.append((STAGES.index(stage), stage, listener))
            self._listeners.sort(key=lambda entry: entry[0])  # stable: same stage keeps order

    def unsubscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners = [e for e in self._listeners if e[2] != listener]

    def tell(self, frame: Frame) -> None:
        """Each listener, in stage order, of ``frame``; a failure is kept, not raised."""
        with self._lock:
            listeners = list(self._listeners)
        for _rank, stage, listener in listeners:
            try:
                listener(frame)
            except Exception as exc:  # one broken listener must not stop the others
                log.exception("store listener %r failed", listener)
                failure = ListenerFailure(
                    stage, listener_name(listener), f"{type(exc).__name__}: {exc}", frame.time
                )
                with self._lock:
                    self.listener_failures += 1
                    del self._failures[: -(KEPT_FAILURES - 1)]  # keep the newest few
                    self._failures.append(failure)

    def take_failures(self) -> list[ListenerFailure]:
        """The listener failures since the previous call (oldest first)."""
        with self._lock:
            out, self._failures = self._failures, []
        return out
