"""Every few seconds (agent thread) and on request: the allocator's segments, summarised.

``torch.cuda.memory_snapshot(include_traces=False)`` is taken on the agent
thread, never on the training thread: it holds the allocator's lock for the
walk of its segments and copies no stack frames while history is off
(PyTorch's "Understanding CUDA Memory Usage"). The summary (agent/allocator/segments.py)
goes into the ring as one ALLOCATOR item per snapshot; a monitor may also ask
for one now (``Op.ALLOCATOR``).

Not available is said with its reason, never as zeros: a torch without
``memory_snapshot`` (older builds), a CPU-only build, no CUDA device touched
yet (the agent never creates a CUDA context), a snapshot that raised.
"""

from __future__ import annotations

import collections
import time

from vramscope.agent.protocol import ItemKind
from vramscope.agent.allocator.segments import SnapshotUnavailable, by_device, summarize

SNAPSHOT_EVERY = 5.0  # seconds between routine snapshots
RECENT_SNAPSHOTS = 12  # the largest request is the maximum over this many snapshots (~1 min)
NO_DEVICE = "no CUDA device in use by this process yet"


def segments_of(provider) -> list:
    """The provider's segments (the cheap snapshot), or SnapshotUnavailable with why."""
    fn = getattr(provider, "segments", None)
    if fn is not None:
        return fn()
    snap = getattr(provider, "snapshot", None)
    if snap is None:
        raise SnapshotUnavailable("this provider takes no allocator snapshots")
    data = snap(None)
    return data.get("segments") or [] if isinstance(data, dict) else []


class AllocatorWatch:
    """The routine snapshot and the figures kept between snapshots. Uses: the ``measurer``
    (its reader's provider, the device names), ``steps`` (the step count), the ``ring``
    and ``error``."""

    def __init__(self, measurer, steps, ring, error, every: float = SNAPSHOT_EVERY):
        self._measurer = measurer
        self._steps = steps
        self._ring = ring
        self._error = error
        self.every = every
        self.next_at = 0.0
        self._recent: dict[str, collections.deque] = {}  # device -> largest live request per snapshot
        self.oom_request: dict[str, int] = {}  # device -> the request of the last OOM
        self.last: dict | None = None  # the last item
        self.last_ms: float | None = None
        self.why: str | None = None  # why there is no summary, where there is none

    def maybe(self, now: float) -> None:
        """Agent thread, at its turn: a snapshot when one is due (never an exception:
        the agent thread goes on)."""
        if now >= self.next_at:
            self.next_at = now + self.every
            try:
                self.take()
            except Exception as exc:
                self._error(exc)

    def take(self, push: bool = True) -> dict:
        """One snapshot now, summarised per device; pushed to the ring (``push``)."""
        measurer = self._measurer
        provider = measurer.provider()
        item: dict = {"t": time.time(), "step": self._steps.count, "devices": [], "why": None}
        t0 = time.perf_counter()
        try:
            if provider is None:
                raise SnapshotUnavailable("no allocator statistics provider")
            indices = provider.devices()
            if not indices:
                raise SnapshotUnavailable(NO_DEVICE)
            settings = provider.allocator_settings() or {}
            expandable = settings.get("expandable_segments")
            grouped = by_device(segments_of(provider))
            for index in indices:
                name = measurer.device_name(index)
                item["devices"].append(self.summary(name, grouped.get(index, []), expandable))
        except SnapshotUnavailable as exc:
            item["why"] = str(exc)
        except Exception as exc:  # the run goes on; the figure is n/a with its reason
            self._error(exc)
            item["why"] = f"the snapshot failed: {type(exc).__name__}: {exc}"[:200]
        self.last_ms = (time.perf_counter() - t0) * 1000.0
        item["took_ms"] = round(self.last_ms, 3)
        self.why = item["why"]
        self.last = item
        if push and (item["devices"] or item["why"] != NO_DEVICE) and ItemKind.ALLOCATOR in self._ring.caps:
            self._ring.push(ItemKind.ALLOCATOR, item)
        return item

    def summary(self, name: str, segments: list, expandable) -> dict:
        recent = self._recent.setdefault(name, collections.deque(maxlen=RECENT_SNAPSHOTS))
        earlier = max(recent, default=None)
        oom = self.oom_request.get(name)
        seen = max((v for v in (earlier, oom) if v is not None), default=None)
        out = summarize(segments, name, seen, expandable=bool(expandable) if expandable is not None else None)
        recent.append(out["largest_request"] or 0)
        return out
