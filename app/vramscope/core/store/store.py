"""The store: the latest frame plus bounded history per series.

The sampler thread appends frames; the UI timer, the detectors and the
recorder read. Reads return copies, so a reader never sees a half-written
array. The series and their keys (``gpu_key``, ``proc_key``, ``mig_key``)
are core/store/series_table.py's; every read and write of them here holds the
store's lock.

Every append tells the store's ``listeners`` (core/store/listeners.py: by stage,
a failing listener isolated and its failure kept for the next frame).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

import numpy as np

from vramscope.core.samples import Frame
from vramscope.core.store.listeners import (  # read through here too (__all__)
    STAGE_DIAGNOSTICS,
    STAGE_LABELS,
    STAGE_OTHER,
    STAGE_RECORDER,
    STAGES,
    ListenerFailure,
    Listeners,
    listener_name,
)
from vramscope.core.store.ring import TieredRing
from vramscope.core.store.series_table import (  # the series' keys, read through here too (__all__)
    GPU_METRICS,
    PROCESSES_USED,
    SeriesTable,
    gpu_key,
    mig_key,
    proc_identity,
    proc_key,
)


class Store:
    def __init__(
        self,
        fine_points: int = 7200,
        coarse_step: float = 10.0,
        coarse_points: int = 17280,
        max_series: int = 4096,
    ):
        self._fine_points = fine_points
        self._coarse_step = coarse_step
        self._table = SeriesTable(fine_points, coarse_step, coarse_points, max_series)
        self._lock = threading.Lock()
        self._latest: Frame | None = None
        self._first_time: float | None = None
        self._version = 0
        self.listeners = Listeners()  # told of every appended frame, by stage

    # -- writing (sampler thread) -------------------------------------------------
    def append(self, frame: Frame) -> None:
        with self._lock:
            t = frame.time
            self._table.write_frame(frame)
            self._latest = frame
            if self._first_time is None:
                self._first_time = t
            self._version += 1
        self.listeners.tell(frame)

    def record(self, key: Hashable, t: float, value: float | None) -> None:
        """Append one value to any series (used by producers other than frames)."""
        with self._lock:
            self._table.record(key, t, value)

    def new_ring(self) -> TieredRing:
        """An empty ring with this store's tiers (to fill with ``TieredRing.load``)."""
        return self._table.new_ring()

    @property
    def fine_points(self) -> int:
        return self._fine_points

    @property
    def coarse_step(self) -> float:
        return self._coarse_step

    def install(self, rings: dict, latest: Frame | None, first_time: float | None) -> None:
        """Add filled rings (a reopened session) and its latest frame in one step.

        Listeners are not called: the frames are history, not new samples.
        """
        with self._lock:
            self._table.install(rings)
            if latest is not None:
                self._latest = latest
            if first_time is not None and (self._first_time is None or first_time < self._first_time):
                self._first_time = first_time
            self._version += 1

    # -- reading (any thread) -----------------------------------------------------
    @property
    def latest(self) -> Frame | None:
        return self._latest

    @property
    def version(self) -> int:
        return self._version

    @property
    def first_time(self) -> float | None:
        return self._first_time

    def series(self, key: Hashable, since: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            return self._table.arrays(key, since)

    def keys(self, prefix: tuple = ()) -> list:
        with self._lock:
            return self._table.keys(prefix)

    def process_keys(self, gpu_index: int) -> list[tuple]:
        """The GPU's process series keys, in order of first sight."""
        with self._lock:
            return self._table.process_keys(gpu_index)

    def process_points(self, gpu_index: int) -> dict:
        """key -> (time, value) of the latest point of each of the GPU's process
        series (NaN: n/a), in order of first sight, read in one go: what a view
        needs to choose the few series it draws."""
        with self._lock:
            return self._table.process_points(gpu_index)

    def last_value(self, key: Hashable) -> float | None:
        with self._lock:
            last = self._table.last(key)
        if last is None or np.isnan(last[1]):
            return None
        return last[1]

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._table.nbytes

    def series_count(self) -> int:
        return len(self._table)


__all__ = [
    "GPU_METRICS",
    "Listeners",
    "PROCESSES_USED",
    "STAGES",
    "STAGE_DIAGNOSTICS",
    "STAGE_LABELS",
    "STAGE_OTHER",
    "STAGE_RECORDER",
    "ListenerFailure",
    "Store",
    "gpu_key",
    "listener_name",
    "mig_key",
    "proc_identity",
    "proc_key",
]
