"""The *watching* state: a rule that needs time has seen the start of its
condition but not enough of it yet -- "idle 3 of 5 min", "kernel idle 4 of 10
min", "no step for 2 of 5 min". Shown below the alerts (in the Alerts tab and
in ``status``) so the first minutes are not silent; not an alert: no severity,
no notification, no count on the tab, not recorded as an alert, no action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vramscope.core.detectors.alert import KIND_TITLES

WATCH_FROM_SECONDS = 60.0  # a condition is shown as watched once it has lasted this long ("1 of 5 min")


@dataclass(frozen=True, slots=True)
class Watch:
    kind: str  # the alert kind it becomes (a key of KIND_TITLES)
    gpu: int | None
    pid: int | None
    start_time: float | None  # the process's start time (identity)
    since: float  # when the condition began
    what: str  # "train.py (4242) on GPU 0"
    measure: str  # "idle", "kernel idle", "no step"
    elapsed: float  # seconds it has lasted
    needed: float  # seconds it must last to become an alert

    @property
    def key(self) -> tuple:
        return ("watching", self.kind, self.gpu, self.pid, self.start_time)

    @property
    def title(self) -> str:
        return KIND_TITLES.get(self.kind, self.kind)

    @property
    def progress(self) -> str:
        """'idle 3 of 5 min'."""
        return f"{self.measure} {int(self.elapsed // 60)} of {_minutes(self.needed)} min"

    @property
    def message(self) -> str:
        return f"{self.what}: {self.progress}"

    @property
    def becomes(self) -> str:
        return f"becomes a {self.title.lower()} alert at {_minutes(self.needed)} min"


def _minutes(seconds: float) -> str:
    m = seconds / 60
    return f"{m:.0f}" if abs(m - round(m)) < 0.05 else f"{m:.1f}"


def watching_to_json(watches) -> list[dict[str, Any]]:
    """The ``"watching"`` list of ``vramscope status --json``."""
    return [{"kind": w.kind, "gpu": w.gpu, "pid": w.pid, "since": w.since,
             "message": w.message, "elapsed_seconds": w.elapsed, "needed_seconds": w.needed}
            for w in watches]


def watch_if_due(kind: str, gpu, proc, since: float | None, now: float, measure: str,
                 needed: float) -> Watch | None:
    """A Watch when the condition began ``WATCH_FROM_SECONDS`` ago or more and has not
    yet lasted ``needed``; the process named as the alerts name it (only then: naming
    costs, and most processes are busy)."""
    if since is None:
        return None
    elapsed = now - since
    if elapsed < WATCH_FROM_SECONDS or elapsed >= needed:
        return None
    from vramscope.core.detectors.naming import proc_name
    return Watch(kind, gpu.index, proc.pid, proc.identity.start_time, since,
                 proc_name(proc, gpu), measure, elapsed, needed)
