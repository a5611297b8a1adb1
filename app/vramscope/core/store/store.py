"""The store: the latest frame plus bounded history per series.

The sampler thread appends frames; the UI timer, the detectors and the
recorder read. Reads return copies, so a reader never sees a half-written
array. Series keys are tuples:

- ``("gpu", index, metric)`` with metric in GPU_METRICS
- ``("proc", gpu_index, pid, start_time, "used")`` -- one series per process
  identity per GPU, so a reused PID starts a new series. These are held as
  columns (core/store/ring_columns.py: a slot per series, no Python object per
  process, so 16k processes add nothing to a full garbage collection's walk);
  every other series is a ``TieredRing``. Both answer the same.
- ``("mig", gpu_index, mig_uuid, metric)`` -- a MIG slice's "used" and "total"
- other producers (the agent client) may add their own keys with ``record``.

Listeners run on the sampler thread after every append, in the order of
their stage (``STAGES``: labels, then diagnostics, then the recorder that
journals the diagnostics' alerts, then anything else), whatever the order
they subscribed in. A listener that raises is isolated: the others still
run, the failure is counted and kept until the pipeline attaches it to the
next frame (``take_failures``), so the window shows it instead of freezing
on the last frame.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

import numpy as np

from vramscope.core.processes.process_columns import ProcessColumns, identities
from vramscope.core.processes.process_columns import used as used_of
from vramscope.core.store.ring import TieredRing
from vramscope.core.store.ring_columns import RingColumns
from vramscope.core.samples import Frame, ProcessIdentity

GPU_METRICS = ("used", "total", "reserved", "util_gpu", "temperature", "power_w")
# The sum of a GPU's per-process figures at each sample (n/a counts 0): the
# stacked view's "others" is this minus the processes drawn on their own, so a
# GPU with a thousand processes costs the window the few it draws, not all.
PROCESSES_USED = "processes_used"

log = logging.getLogger(__name__)

Listener = Callable[[Frame], None]

# The stage order of the listeners (see the module text).
STAGE_LABELS = "labels"
STAGE_DIAGNOSTICS = "diagnostics"
STAGE_RECORDER = "recorder"
STAGE_OTHER = "other"
STAGES = (STAGE_LABELS, STAGE_DIAGNOSTICS, STAGE_RECORDER, STAGE_OTHER)


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
        self._coarse_points = coarse_points
        self._max_series = max_series
        # key -> its TieredRing, or for a process series its slot in ``_procs``
        # (one dict, so keys() and eviction keep the order of first sight)
        self._series: dict[Hashable, TieredRing | int] = {}
        self._procs = RingColumns(fine_points, coarse_step, coarse_points)
        self._by_gpu: dict[int, dict[tuple, None]] = {}  # GPU -> its process keys, first seen first
        # GPU -> (its processes' descriptions, their slots): the slots again while a stream
        # reader gives the same descriptions object (16k keys a frame not made on a big box)
        self._slots_of: dict[int, tuple] = {}
        self._lock = threading.Lock()
        self._latest: Frame | None = None
        self._first_time: float | None = None
        self._version = 0
        self._listeners: list[tuple[int, str, Listener]] = []  # sorted by stage
        self._failures: list[ListenerFailure] = []  # not yet taken
        self.listener_failures = 0  # ever

    # -- writing (sampler thread) -------------------------------------------------
    def append(self, frame: Frame) -> None:
        with self._lock:
            t = frame.time
            series = self._series
            for gpu in frame.gpus:
                self._record(gpu_key(gpu.index, "used"), t, gpu.used)
                self._record(gpu_key(gpu.index, "total"), t, gpu.total)
                self._record(gpu_key(gpu.index, "reserved"), t, gpu.reserved)
                self._record(gpu_key(gpu.index, "util_gpu"), t, gpu.util_gpu)
                self._record(gpu_key(gpu.index, "temperature"), t, gpu.temperature)
                self._record(gpu_key(gpu.index, "power_w"), t, gpu.power_w)
                procs = gpu.processes
                values = list(used_of(procs))
                held = self._slots_of.get(gpu.index)
                if held is not None and type(procs) is ProcessColumns and procs.infos is held[0]:
                    slots = held[1]  # the last frame's processes (ProcessColumns.infos): no key made
                else:
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
                in_use = None if gpu.processes_pending else in_use
                self._record(gpu_key(gpu.index, PROCESSES_USED), t, in_use)
                for mig in gpu.slices:
                    if mig.uuid is not None:
                        self._record(mig_key(gpu.index, mig.uuid, "used"), t, mig.used)
                        self._record(mig_key(gpu.index, mig.uuid, "total"), t, mig.total)
            self._latest = frame
            if self._first_time is None:
                self._first_time = t
            self._version += 1
            if len(self._series) > self._max_series and len(self._series) > self._written(frame):
                self._evict_stale(t)  # (only when some series did not get a point of this frame)
            listeners = list(self._listeners)
        for _rank, stage, listener in listeners:
            try:
                listener(frame)
            except Exception as exc:  # one broken listener must not stop the others
                log.exception("store listener %r failed", listener)
                failure = ListenerFailure(stage, listener_name(listener), f"{type(exc).__name__}: {exc}", t)
                with self._lock:
                    self.listener_failures += 1
                    del self._failures[:-15]  # keep the newest few
                    self._failures.append(failure)

    @staticmethod
    def _written(frame: Frame) -> int:
        """How many series ``append`` wrote for ``frame`` (at most: a process listed
        twice on a GPU writes one series)."""
        return sum(
            len(GPU_METRICS) + 1 + len(gpu.processes) + 2 * sum(m.uuid is not None for m in gpu.slices)
            for gpu in frame.gpus
        )

    def take_failures(self) -> list[ListenerFailure]:
        """The listener failures since the previous call (oldest first)."""
        with self._lock:
            out, self._failures = self._failures, []
        return out

    def record(self, key: Hashable, t: float, value: float | None) -> None:
        """Append one value to any series (used by producers other than frames)."""
        with self._lock:
            self._record(key, t, value)

    def _record(self, key: Hashable, t: float, value) -> None:
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
        """An empty ring with this store's tiers (to fill with ``TieredRing.load``)."""
        return TieredRing(self._fine_points, self._coarse_step, self._coarse_points)

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
            for key, ring in rings.items():
                if not _is_proc(key):
                    self._series[key] = ring
                    continue
                slot = self._series.get(key)
                if slot is None:
                    slot = self._new_series(key)
                self._procs.adopt(slot, ring.state())
            if latest is not None:
                self._latest = latest
            if first_time is not None and (self._first_time is None or first_time < self._first_time):
                self._first_time = first_time
            self._version += 1

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
            ring = self._series.get(key)
            if ring is None:
                return np.empty(0), np.empty(0)
            return self._procs.arrays(ring, since) if ring.__class__ is int else ring.arrays(since)

    def keys(self, prefix: tuple = ()) -> list:
        n = len(prefix)
        with self._lock:
            return [k for k in self._series if isinstance(k, tuple) and k[:n] == prefix]

    def process_keys(self, gpu_index: int) -> list[tuple]:
        """The GPU's process series keys, in order of first sight."""
        with self._lock:
            return list(self._by_gpu.get(gpu_index, ()))

    def process_points(self, gpu_index: int) -> dict:
        """key -> (time, value) of the latest point of each of the GPU's process
        series (NaN: n/a), in order of first sight, read in one go: what a view
        needs to choose the few series it draws."""
        with self._lock:
            series, last_of = self._series, self._procs.last
            return {
                k: last for k in self._by_gpu.get(gpu_index, ()) if (last := last_of(series[k])) is not None
            }

    def last_value(self, key: Hashable) -> float | None:
        with self._lock:
            ring = self._series.get(key)
            if ring is None:
                last = None
            else:
                last = self._procs.last(ring) if ring.__class__ is int else ring.last()
        if last is None or np.isnan(last[1]):
            return None
        return last[1]

    @property
    def nbytes(self) -> int:
        with self._lock:
            rings = sum(r.nbytes for r in self._series.values() if r.__class__ is not int)
            return rings + self._procs.nbytes()

    def series_count(self) -> int:
        return len(self._series)

    def extend(self, frames: Iterable[Frame]) -> None:
        for frame in frames:
            self.append(frame)
