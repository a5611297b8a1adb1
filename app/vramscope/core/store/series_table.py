"""The store's series, by key: a bounded history (core/store/ring.py's tiers) per
series, the processes' as columns (core/store/ring_columns.py: a slot per series, no
Python object per process, so 16k processes add nothing to a full garbage
collection's walk). Keys are tuples:

- ``("gpu", index, metric)`` with metric in GPU_METRICS, and PROCESSES_USED
- ``("proc", gpu_index, pid, start_time, "used")`` -- one series per process
  identity per GPU, so a reused PID starts a new series
- ``("mig", gpu_index, mig_uuid, metric)`` -- a MIG slice's "used" and "total"
- other producers (the agent client) may add their own keys with ``record``.

``SeriesTable`` holds no lock: the store (core/store/store.py) calls it under its own.
Past ``max_series`` the series that ended longest ago are dropped.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from vramscope.core.processes.process_columns import ProcessColumns, identities
from vramscope.core.processes.process_columns import used as used_of
from vramscope.core.samples import Frame, GpuSample, ProcessIdentity
from vramscope.core.store.ring import TieredRing
from vramscope.core.store.ring_columns import RingColumns

GPU_METRICS = ("used", "total", "reserved", "util_gpu", "temperature", "power_w")
# The sum of a GPU's per-process figures at each sample (n/a counts 0): the
# stacked view's "others" is this minus the processes drawn on their own, so a
# GPU with a thousand processes costs the window the few it draws, not all.
PROCESSES_USED = "processes_used"


def gpu_key(index: int, metric: str) -> tuple:
    return ("gpu", index, metric)


def proc_key(gpu_index: int, pid: int, start_time: float | None) -> tuple:
    return ("proc", gpu_index, pid, start_time, "used")


def proc_identity(key: tuple) -> ProcessIdentity:
    """The process a proc_key's series belongs to."""
    _, _gpu, pid, start, _metric = key
    return (pid, start)


def _is_proc(key) -> bool:
    return isinstance(key, tuple) and len(key) == 5 and key[0] == "proc"


def mig_key(gpu_index: int, mig_uuid: str, metric: str) -> tuple:
    """One MIG slice's series ("used" / "total") under its GPU."""
    return ("mig", gpu_index, mig_uuid, metric)


class SeriesTable:
    def __init__(self, fine_points: int, coarse_step: float, coarse_points: int, max_series: int):
        self._tiers = (fine_points, coarse_step, coarse_points)
        self._max_series = max_series
        # key -> its TieredRing, or for a process series its slot in ``_procs``
        # (one dict, so keys() and eviction keep the order of first sight)
        self._series: dict[Hashable, TieredRing | int] = {}
        self._procs = RingColumns(fine_points, coarse_step, coarse_points)
        self._by_gpu: dict[int, dict[tuple, None]] = {}  # GPU -> its process keys, first seen first
        # GPU -> (its processes' descriptions, their slots): the slots again while a stream
        # reader gives the same descriptions object (16k keys a frame not made on a big box)
        self._slots_of: dict[int, tuple] = {}

    def __len__(self) -> int:
        return len(self._series)

    # -- writing --------------------------------------------------------------------
    def write_frame(self, frame: Frame) -> None:
        """A point at the frame's time in each of its GPUs', processes' and MIG
        slices' series; then, over the cap, the series that ended longest ago go."""
        for gpu in frame.gpus:
            self._write_gpu(gpu, frame.time)
        if len(self._series) > self._max_series and len(self._series) > self._written(frame):
            self._evict_stale(frame.time)  # (only when some series did not get a point of this frame)

    def _write_gpu(self, gpu: GpuSample, t: float) -> None:
        record = self.record
        record(gpu_key(gpu.index, "used"), t, gpu.used)
        record(gpu_key(gpu.index, "total"), t, gpu.total)
        record(gpu_key(gpu.index, "reserved"), t, gpu.reserved)
        record(gpu_key(gpu.index, "util_gpu"), t, gpu.util_gpu)
        record(gpu_key(gpu.index, "temperature"), t, gpu.temperature)
        record(gpu_key(gpu.index, "power_w"), t, gpu.power_w)
        procs = gpu.processes
        values = list(used_of(procs))
        held = self._slots_of.get(gpu.index)
        if held is not None and type(procs) is ProcessColumns and procs.infos is held[0]:
            slots = held[1]  # the last frame's processes (ProcessColumns.infos): no key made
        else:
            series = self._series
            slots = []
            for pid, start in identities(procs):
                key = proc_key(gpu.index, pid, start)
                slot = series.get(key)
                slots.append(self._new_series(key) if slot is None else slot)
            if type(procs) is ProcessColumns:
                self._slots_of[gpu.index] = (procs.infos, slots)
            else:
                self._slots_of.pop(gpu.index, None)
        self._procs.extend(slots, t, values)
        in_use = sum(filter(None, values))  # (n/a counts 0)
        # (not read yet: n/a, not a zero -- core/stream/first_look.py)
        record(gpu_key(gpu.index, PROCESSES_USED), t, None if gpu.processes_pending else in_use)
        for mig in gpu.slices:
            if mig.uuid is not None:
                record(mig_key(gpu.index, mig.uuid, "used"), t, mig.used)
                record(mig_key(gpu.index, mig.uuid, "total"), t, mig.total)

    @staticmethod
    def _written(frame: Frame) -> int:
        """How many series ``write_frame`` wrote for ``frame`` (at most: a process listed
        twice on a GPU writes one series)."""
        return sum(
            len(GPU_METRICS) + 1 + len(gpu.processes) + 2 * sum(m.uuid is not None for m in gpu.slices)
            for gpu in frame.gpus
        )

    def record(self, key: Hashable, t: float, value) -> None:
        ring = self._series.get(key)
        if ring is None:
            ring = self._new_series(key)
        if ring.__class__ is int:
            self._procs.append(ring, t, value)
        else:
            ring.append(t, value)

    def _new_series(self, key):
        """An empty series for a key seen first: a process's slot, or a ring."""
        if _is_proc(key):
            ring = self._series[key] = self._procs.add()
            self._by_gpu.setdefault(key[1], {})[key] = None
        else:
            ring = self._series[key] = self.new_ring()
        return ring

    def new_ring(self) -> TieredRing:
        """An empty ring with this table's tiers (to fill with ``TieredRing.load``)."""
        return TieredRing(*self._tiers)

    def install(self, rings: dict) -> None:
        """Add filled rings (a reopened session)."""
        for key, ring in rings.items():
            if not _is_proc(key):
                self._series[key] = ring
                continue
            slot = self._series.get(key)
            if slot is None:
                slot = self._new_series(key)
            self._procs.adopt(slot, ring.state())

    def _evict_stale(self, now: float) -> None:
        """Drop the series that ended longest ago until under the cap. Series this
        frame just wrote are never dropped: on a box with more live processes than
        the cap, evicting them would only recreate them on the next frame (and
        hold the lock the window reads under for every frame)."""
        last_time = self._procs.last_time
        ended = []
        for key, ring in self._series.items():
            last = (last_time(ring) if ring.__class__ is int else ring.last_time()) or 0.0
            if last < now:
                ended.append((last, key))
        excess = len(self._series) - self._max_series
        if not ended or excess <= 0:
            return
        ended.sort(key=lambda e: e[0])
        self._slots_of.clear()  # (a slot dropped may be given to another process)
        for _, key in ended[:excess]:
            ring = self._series.pop(key)
            if ring.__class__ is int:
                self._procs.drop(ring)
                self._by_gpu.get(key[1], {}).pop(key, None)

    # -- reading --------------------------------------------------------------------
    def arrays(self, key: Hashable, since: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        ring = self._series.get(key)
        if ring is None:
            return np.empty(0), np.empty(0)
        return self._procs.arrays(ring, since) if ring.__class__ is int else ring.arrays(since)

    def keys(self, prefix: tuple = ()) -> list:
        n = len(prefix)
        return [k for k in self._series if isinstance(k, tuple) and k[:n] == prefix]

    def process_keys(self, gpu_index: int) -> list[tuple]:
        return list(self._by_gpu.get(gpu_index, ()))

    def process_points(self, gpu_index: int) -> dict:
        series, last_of = self._series, self._procs.last
        return {k: last for k in self._by_gpu.get(gpu_index, ()) if (last := last_of(series[k])) is not None}

    def last(self, key: Hashable) -> tuple[float, float] | None:
        ring = self._series.get(key)
        if ring is None:
            return None
        return self._procs.last(ring) if ring.__class__ is int else ring.last()

    @property
    def nbytes(self) -> int:
        rings = sum(r.nbytes for r in self._series.values() if r.__class__ is not int)
        return rings + self._procs.nbytes()
