"""Alerts judged elsewhere: the window's engine when its sampler process runs
the diagnostics (sources/remote/local_sampler.py).

The sampler process runs the rules over every frame and sends the alerts with
it (core/stream/); running them again in the window cost most of the window's
CPU (bench/README.md, issue 28). ``TakenAlerts`` keeps what is the window's
own -- acknowledged and muted alerts, "since" for an alert that lacks it --
and takes the alerts themselves from ``judged(frame)``: the sampler's alerts
for that frame (JSON dicts, core/detectors/alert.py ``alerts_to_json``), or
None for a frame the sampler did not judge (one made while it was down),
which the window's own rules judge instead.
"""

from __future__ import annotations

from collections.abc import Callable

from vramscope.core.detectors.alert import Alert, alert_from_json
from vramscope.core.detectors.engine import Diagnostics
from vramscope.core.detectors.watching import Watch, watch_from_wire
from vramscope.core.samples import Frame


class TakenAlerts(Diagnostics):
    def __init__(self, judged: Callable[[Frame], list | None], settings=None):
        super().__init__(settings)
        self._judged = judged
        self._taken = False  # whether the last frame's alerts were taken
        self._sent_watches: list[Watch] = []  # what the sampler is watching (watching.py)

    def _find(self, frame: Frame) -> list[Alert]:
        sent = self._judged(frame)
        self._taken = sent is not None
        if sent is None:
            return super()._find(frame)
        self._sent_watches = [w for w in map(watch_from_wire, sent) if w is not None]
        return [a for a in map(alert_from_json, sent) if a is not None]

    def _watches(self) -> list[Watch]:
        # the sampler's, sent among its alerts (commands/stream.py)
        return list(self._sent_watches) if self._taken else super()._watches()
