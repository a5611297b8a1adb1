"""The one monitoring pipeline, Qt-free:

    source -> enrichers -> store -> listeners by stage -> views

Stage order is explicit (core/store/store.py ``STAGES``): the process labels
first, then the diagnostics engine, then the recorder (which journals the
alerts the engine just produced), then anything else. The window, `record`
and `status` all sample through this class (core/flow/monitor.py adds the
diagnostics, recorder and metrics around it).

The source can be swapped while the app runs -- "Show the demo" after a
missing driver -- without a restart; the store, and whatever subscribed to
it, stay the same.
"""

from __future__ import annotations

import threading

from vramscope.core.processes.process_columns import ProcessColumns, described, identities
from vramscope.core.processes.process_groups import kin_of
from vramscope.core.processes.process_names import process_label
from vramscope.core.flow.sampler import DEFAULT_INTERVAL, Enricher, Sampler
from vramscope.core.samples import Frame, ProcessIdentity
from vramscope.core.flow.source import Source, close_quietly
from vramscope.core.store.store import STAGE_LABELS, Store, proc_identity

LABELS_KEPT_MIN = 1024  # process labels kept before those of processes the store forgot are dropped


class Pipeline:
    def __init__(
        self,
        source: Source,
        store: Store | None = None,
        interval: float = DEFAULT_INTERVAL,
        enrichers: list[Enricher] | None = None,
    ):
        self.store = store if store is not None else Store()
        self.sampler = Sampler(source, self.store, interval, enrichers)
        self._lock = threading.Lock()
        self._labels_lock = threading.Lock()
        self._labels: dict[ProcessIdentity, str] = {}  # in order of first sight
        self._kin: dict[ProcessIdentity, tuple] = {}  # what groups it (process_groups.kin_of)
        self._prune_at = LABELS_KEPT_MIN  # labels held before those of forgotten processes go
        self._labels_generation = 0  # counts the prunings (a view's "labels seen so far" restarts)
        self._described_seen: dict[tuple, tuple] = {}  # (host, GPU) -> its processes' descriptions learnt
        self.store.listeners.subscribe(self._learn_labels, stage=STAGE_LABELS)

    def subscribe(self, listener, stage: str) -> None:
        """Add a listener at its stage (see core/store/store.py ``STAGES``)."""
        self.store.listeners.subscribe(listener, stage=stage)

    def labels(self) -> dict[ProcessIdentity, str]:
        """'train.py (4242)' per process identity the store still holds a series of
        (or seen in the latest frame), in order of first sight."""
        with self._labels_lock:
            return dict(self._labels)

    @property
    def labels_generation(self) -> int:
        """Goes up each time labels of processes the store forgot are dropped: a view
        that walks ``labels()`` from where it stopped starts again from the first."""
        return self._labels_generation

    def kin(self) -> dict[ProcessIdentity, tuple]:
        """Per process identity seen with a command line, what groups it with others."""
        with self._labels_lock:
            return dict(self._kin)

    def learn_labels(self, processes) -> None:
        """Labels for processes known without a frame (a reopened session's)."""
        with self._labels_lock:
            for proc in processes:
                self._labels.setdefault(proc.identity, process_label(proc))
                kin = kin_of(proc.info)
                if kin is not None:
                    self._kin.setdefault(proc.identity, kin)

    def _learn_labels(self, frame: Frame) -> None:
        # Store listener: runs on the sampler thread, so every frame is seen even
        # when the window polls less often than the sampler samples.
        with self._labels_lock:
            labels, seen = self._labels, self._described_seen
            for gpu in frame.gpus:
                procs = gpu.processes
                if type(procs) is ProcessColumns:
                    # the descriptions object the last frame's (ProcessColumns.infos): the
                    # same processes, described as then, learnt then (16k a frame on a big box)
                    where = (gpu.host, gpu.index)
                    if seen.get(where) is procs.infos:
                        continue
                    seen[where] = procs.infos
                for i, (ident, known) in enumerate(zip(identities(procs), described(procs))):
                    have = labels.get(ident)
                    if have is None or (known and have.startswith("pid ")):
                        proc = procs[i]
                        labels[ident] = process_label(proc)
                        kin = kin_of(proc.info, gpu.host)
                        if kin is not None:
                            self._kin[ident] = kin
            if len(self._labels) > self._prune_at:
                self._forget_ended(frame)

    def _forget_ended(self, frame: Frame) -> None:
        """Drop the labels of processes whose every series the store has evicted:
        on a box where processes come and go, the labels (copied whole by each
        timeline update) would otherwise grow for as long as the window is open."""
        held = {proc_identity(key) for key in self.store.keys(("proc",))}
        for gpu in frame.gpus:
            held.update(identities(gpu.processes))
        self._labels = {ident: label for ident, label in self._labels.items() if ident in held}
        self._kin = {ident: kin for ident, kin in self._kin.items() if ident in held}
        self._prune_at = max(LABELS_KEPT_MIN, 2 * len(self._labels))
        self._labels_generation += 1

    @property
    def source(self) -> Source:
        return self.sampler.source

    @property
    def interval(self) -> float:
        return self.sampler.interval

    @property
    def simulated(self) -> bool:
        return bool(getattr(self.source, "simulated", False))

    def trouble(self) -> str | None:
        """What went wrong in the pipeline lately, for a status line; None when all is well."""
        if self.sampler.failure is not None:
            return self.sampler.failure
        last = self.sampler.last_notices
        if not last:
            return None
        count = self.sampler.notice_count
        return f"{last[-1]} ({count} failure{'s' if count != 1 else ''} so far)"

    def sample_once(self) -> Frame:
        return self.sampler.sample_once()

    def start(self) -> None:
        self.sampler.start()

    def stop(self) -> None:
        self.sampler.stop()

    def close(self) -> None:
        """Stop sampling; close the source and the enrichers (agent connections)."""
        with self._lock:
            self.sampler.stop()
            close_quietly(self.sampler.source)
            for enrich in self.sampler.enrichers:
                close_quietly(enrich)

    def switch_source(self, source: Source) -> None:
        """Stop sampling, swap the source, resume (the first pass runs at once).

        Blocks while the current pass finishes: call it from a worker thread
        (``Bridge.run_in_thread``), never from the GUI thread.
        """
        with self._lock:
            was_running = self.sampler.running
            self.sampler.stop()
            old, self.sampler.source = self.sampler.source, source
            close_quietly(old)
            if was_running:
                self.sampler.start()  # its first pass runs immediately
            else:
                self.sampler.sample_once()
