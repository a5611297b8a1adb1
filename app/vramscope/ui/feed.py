"""The live feed behind a window: one source, one sampler thread, one store.

Qt-free on purpose (it only lives here because the window owns it). The
source can be swapped while the app runs -- "Show the demo" after a
missing driver -- without a restart; the store, and whatever subscribed to
it (detectors, recorder), stay the same.
"""

from __future__ import annotations

import threading

from vramscope.core.sampler import DEFAULT_INTERVAL, Enricher, Sampler
from vramscope.core.store import Store
from vramscope.core.samples import Frame, ProcessIdentity
from vramscope.sources.base import Source
from vramscope.ui.labels import process_label


class LiveFeed:
    def __init__(self, source: Source, store: Store | None = None,
                 interval: float = DEFAULT_INTERVAL, enrichers: list[Enricher] | None = None):
        self.store = store if store is not None else Store()
        self.sampler = Sampler(source, self.store, interval, enrichers)
        self._lock = threading.Lock()
        self._labels_lock = threading.Lock()
        self._labels: dict[ProcessIdentity, str] = {}  # in order of first sight
        self.store.subscribe(self._learn_labels)

    def labels(self) -> dict[ProcessIdentity, str]:
        """'train.py (4242)' per process identity ever seen, in order of first sight."""
        with self._labels_lock:
            return dict(self._labels)

    def learn_labels(self, processes) -> None:
        """Labels for processes known without a frame (a reopened session's)."""
        with self._labels_lock:
            for proc in processes:
                self._labels.setdefault(proc.identity, process_label(proc))

    def _learn_labels(self, frame: Frame) -> None:
        # Store listener: runs on the sampler thread, so every frame is seen even
        # when the window polls less often than the sampler samples.
        with self._labels_lock:
            for _gpu, proc in frame.all_processes():
                ident = proc.identity
                have = self._labels.get(ident)
                if have is None or (have.startswith("pid ") and proc.info is not None):
                    self._labels[ident] = process_label(proc)

    @property
    def source(self) -> Source:
        return self.sampler.source

    @property
    def interval(self) -> float:
        return self.sampler.interval

    @property
    def simulated(self) -> bool:
        return bool(getattr(self.source, "simulated", False))

    def start(self) -> None:
        self.sampler.start()

    def stop(self) -> None:
        self.sampler.stop()

    def close(self) -> None:
        with self._lock:
            self.sampler.stop()
            _close(self.sampler.source)

    def switch_source(self, source: Source) -> None:
        """Stop sampling, swap the source, resume (the first pass runs at once).

        Blocks while the current pass finishes: call it from a worker thread
        (``Bridge.run_in_thread``), never from the GUI thread.
        """
        with self._lock:
            was_running = self.sampler.running
            self.sampler.stop()
            old, self.sampler.source = self.sampler.source, source
            _close(old)
            if was_running:
                self.sampler.start()  # its first pass runs immediately
            else:
                self.sampler.sample_once()


def _close(source) -> None:
    close = getattr(source, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # closing a broken source must not stop the swap
            pass
