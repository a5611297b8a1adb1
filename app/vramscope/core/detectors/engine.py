"""The diagnostics engine: frames in, current alerts out.

Keeps the per-identity state the rules need across frames (idle since,
step history, allocator counters). Feed it from the sampler thread with
``engine.attach(store)`` (a Store listener) or call ``feed(frame)``
directly (``status --watch``, tests). Readers on other threads call
``alerts()``, which returns a copy.

Acknowledge hides one alert until its condition clears or gets worse;
mute hides every alert of one process identity (pid + start time), so a
reused PID is not muted.
"""

from __future__ import annotations

import dataclasses
import threading

from vramscope.agent.protocol import EventKind
from vramscope.core.detectors.alert import Alert, severity_rank, sort_alerts
from vramscope.core.detectors.checkpointing import CheckpointingRule
from vramscope.core.detectors.eval_autograd import EvalAutogradRule
from vramscope.core.detectors.fragmentation import FragmentationRule
from vramscope.core.detectors.ghost import GhostRule, InContainerRule
from vramscope.core.detectors.growth import GrowthRule
from vramscope.core.detectors.leak import LeakRule
from vramscope.core.detectors.near_oom import NearOomRule
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.detectors.serving import ServerRule
from vramscope.core.detectors.squatter import KernelActivityLookup, NotebookFinder, SquatterRule
from vramscope.core.detectors.unattributed import UnattributedRule
from vramscope.core.detectors.watching import Watch
from vramscope.core.detectors.wsl_limits import WslRule
from vramscope.core.samples import Frame, ProcessIdentity


class Diagnostics:
    def __init__(
        self,
        settings: DiagnosticSettings | None = None,
        notebook_finder: NotebookFinder | None = None,
        kernel_activity: KernelActivityLookup | None = None,
    ):
        self._lock = threading.RLock()
        self._settings = settings or DiagnosticSettings()
        self._squatters = SquatterRule(notebook_finder, kernel_activity)
        self._servers = ServerRule()
        growth = GrowthRule()  # before near-OOM, which names the processes it finds growing
        self._rules = [
            UnattributedRule(),
            FragmentationRule(),
            LeakRule(),
            EvalAutogradRule(),
            CheckpointingRule(),
            growth,
            NearOomRule(growth),
            GhostRule(),
            InContainerRule(),
            WslRule(),
        ]
        self._first_seen: dict[tuple, float] = {}
        self._current: list[Alert] = []
        self._watching: list[Watch] = []
        self._acked: dict[tuple, int] = {}  # key -> severity rank when acknowledged
        self._muted: set[ProcessIdentity] = set()
        self.version = 0  # bumped on every feed
        self.last_time: float | None = None

    # -- configuration --------------------------------------------------------------
    @property
    def settings(self) -> DiagnosticSettings:
        return self._settings

    @settings.setter
    def settings(self, value: DiagnosticSettings) -> None:
        with self._lock:
            self._settings = value

    def attach(self, store) -> None:
        """Run on every frame the store receives (on the sampler thread)."""
        store.listeners.subscribe(self.feed)

    def detach(self, store) -> None:
        store.listeners.unsubscribe(self.feed)

    # -- feeding --------------------------------------------------------------------
    def feed(self, frame: Frame) -> list[Alert]:
        """Update with one frame; returns the visible alerts."""
        # The rules run outside the lock: only this (sampler) thread feeds them, and
        # a busy machine's pass takes long enough that the window, reading the
        # alerts under the lock, would wait for it.
        found = self._find(frame)
        with self._lock:
            keys = set()
            out = []
            places = {g.index: g for g in frame.gpus if g.host is not None}
            for alert in found:
                key = alert.key
                keys.add(key)
                first = self._first_seen.setdefault(key, frame.time)
                changes = {} if alert.since is not None else {"since": first}
                where = places.get(alert.gpu)
                if where is not None:  # another machine's GPU: the alert names its host
                    changes.update(host=where.host, host_index=where.host_index)
                out.append(dataclasses.replace(alert, **changes) if changes else alert)
            for key in [k for k in self._first_seen if k not in keys]:
                del self._first_seen[key]
            for key in [k for k in self._acked if k not in keys]:
                del self._acked[key]  # cleared: it may alert again next time
            self._current = sort_alerts(out)
            self._watching = self._watches()
            self.version += 1
            self.last_time = frame.time
            return self._visible(self._current)

    __call__ = feed

    def _find(self, frame: Frame) -> list[Alert]:
        """The rules' alerts on this frame."""
        with self._lock:
            settings = self._settings
        active = frozenset(r.pid for r in frame.agents if any(e.kind == EventKind.STEP for e in r.events))
        found = self._squatters.update(frame, settings, active)
        found.extend(self._servers.update(frame, settings, active))
        for rule in self._rules:
            found.extend(rule.update(frame, settings))
        return found

    def _watches(self) -> list[Watch]:
        return sorted(self._squatters.watching, key=lambda w: w.needed - w.elapsed)

    # -- reading --------------------------------------------------------------------
    def alerts(self, include_hidden: bool = False) -> list[Alert]:
        with self._lock:
            if include_hidden:
                return list(self._current)
            return self._visible(self._current)

    def watching(self) -> list[Watch]:
        """Conditions on their way to an alert ("idle 3 of 5 min"; watching.py), the
        nearest first; a muted process's are left out. Not alerts."""
        with self._lock:
            return [w for w in self._watching if w.pid is None or (w.pid, w.start_time) not in self._muted]

    def is_hidden(self, alert: Alert) -> bool:
        with self._lock:
            return self._hidden(alert)

    def _visible(self, alerts):
        return [a for a in alerts if not self._hidden(a)]

    def _hidden(self, alert: Alert) -> bool:
        if alert.identity is not None and alert.identity in self._muted:
            return True
        acked = self._acked.get(alert.key)
        return acked is not None and severity_rank(alert.severity) <= acked

    # -- user choices -----------------------------------------------------------------
    def acknowledge(self, alert: Alert) -> None:
        with self._lock:
            self._acked[alert.key] = severity_rank(alert.severity)

    def mute(self, identity: ProcessIdentity) -> None:
        with self._lock:
            self._muted.add(identity)

    def unmute(self, identity: ProcessIdentity) -> None:
        with self._lock:
            self._muted.discard(identity)

    def is_muted(self, identity: ProcessIdentity | None) -> bool:
        with self._lock:
            return identity is not None and identity in self._muted

    @property
    def muted(self) -> frozenset[ProcessIdentity]:
        with self._lock:
            return frozenset(self._muted)
