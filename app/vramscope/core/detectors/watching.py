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
    return [
        {
            "kind": w.kind,
            "gpu": w.gpu,
            "pid": w.pid,
            "since": w.since,
            "message": w.message,
            "elapsed_seconds": w.elapsed,
            "needed_seconds": w.needed,
        }
        for w in watches
    ]


WATCHING = "watching"  # the key that marks a Watch among a stream's alerts


def watch_to_wire(w: Watch) -> dict[str, Any]:
    """A Watch as the stream sends it, among the frame's alerts (which it is not: an
    alert decoder passes over it, having no severity) -- so the window reading its
    sampler process, or an ssh host, shows what is on its way to an alert too."""
    return {
        WATCHING: w.kind,
        "gpu": w.gpu,
        "pid": w.pid,
        "start_time": w.start_time,
        "since": w.since,
        "what": w.what,
        "measure": w.measure,
        "elapsed": w.elapsed,
        "needed": w.needed,
    }


def watch_from_wire(data) -> Watch | None:
    """A ``watch_to_wire`` entry back as a Watch; None for anything else (an alert)."""
    if not isinstance(data, dict) or type(data.get(WATCHING)) is not str:
        return None

    def num(name):
        v = data.get(name)
        return float(v) if type(v) in (int, float) else None

    gpu, pid = data.get("gpu"), data.get("pid")
    what, measure = data.get("what"), data.get("measure")
    since, elapsed, needed = num("since"), num("elapsed"), num("needed")
    if (
        (gpu is not None and type(gpu) is not int)
        or (pid is not None and type(pid) is not int)
        or type(what) is not str
        or type(measure) is not str
        or None in (since, elapsed, needed)
    ):
        return None
    return Watch(
        data[WATCHING][:64], gpu, pid, num("start_time"), since, what[:300], measure[:64], elapsed, needed
    )


def watch_if_due(
    kind: str, gpu, proc, since: float | None, now: float, measure: str, needed: float
) -> Watch | None:
    """A Watch when the condition began ``WATCH_FROM_SECONDS`` ago or more and has not
    yet lasted ``needed``; the process named as the alerts name it (only then: naming
    costs, and most processes are busy)."""
    if since is None:
        return None
    elapsed = now - since
    if elapsed < WATCH_FROM_SECONDS or elapsed >= needed:
        return None
    from vramscope.core.detectors.naming import proc_name

    return Watch(
        kind,
        gpu.index,
        proc.pid,
        proc.identity[1],
        since,
        proc_name(proc, gpu),
        measure,
        elapsed,
        needed,
    )
