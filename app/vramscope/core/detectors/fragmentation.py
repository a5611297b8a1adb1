"""Fragmentation: free space the process cannot use.

From "Surviving GPU OOM": the caching allocator keeps freed blocks; repeated
allocation and release leave the free space in slivers, so the total is
enough but no contiguous block is. The diagnosis is the gap between reserved
and allocated -- but a large gap alone can be a healthy cache, so this rule
also wants the allocator's own evidence: much of the gap non-releasable
(inactive_split: free pieces of split blocks), or num_alloc_retries rising
(cudaMalloc failed, the cache was flushed and the allocation retried) -- rising
over a window, at ``frag_min_retry_rises`` separate samples: one retry (a
single large allocation at a peak) is not a trend and raises nothing.

Where the agent sent a summary of the allocator's segments (agent/allocator/segments.py,
from ``torch.cuda.memory_snapshot()``), the rule judges by its figures instead
of the counters: the free space inside partly used segments (what
``empty_cache()`` cannot return), the whole free segments (what it would),
the largest free block against the largest request, and what
``expandable_segments:True`` would recover -- the whole pages inside the free
pieces, counted from the snapshot.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from vramscope.core.detectors.agentmap import cuda_devices, expandable_segments, gpu_for_device
from vramscope.core.detectors.alert import WARNING, Alert, AlertKind
from vramscope.core.detectors.fragmentation_snapshot import (
    recovers_text,
    snapshot_evidence,
    snapshot_figures,
)
from vramscope.core.detectors.naming import process_name
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.samples import Frame
from vramscope.core.units import fmt_bytes, fmt_duration

EMPTY_CACHE_NOT_THE_FIX = (
    "torch.cuda.empty_cache() is not the fix: it only hands the cached blocks back to "
    "the driver, which makes the next allocations slower and solves nothing if you are "
    "genuinely short; inside a loop it is almost always a mistake."
)


@dataclass
class _DevState:
    last_seen: float
    gap_since: float | None = None
    retries: deque = field(default_factory=deque)  # (time, num_alloc_retries)


class FragmentationRule:
    def __init__(self):
        self._state: dict[tuple, _DevState] = {}

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        alerts = []
        for report in frame.agents:
            if not report.connected:
                continue
            for dev in cuda_devices(report):
                key = (report.identity, dev.device)
                st = self._state.get(key)
                if st is None:
                    st = self._state[key] = _DevState(last_seen=now)
                st.last_seen = now
                alert = self._judge(frame, report, dev, st, now, settings)
                if alert is not None:
                    alerts.append(alert)
        forget_stale(self._state, now, settings)
        return alerts

    def _judge(
        self, frame, report, dev, st: _DevState, now: float, settings: DiagnosticSettings
    ) -> Alert | None:
        # retries rising within the window
        window = settings.frag_retry_window_minutes * 60
        if dev.num_alloc_retries is not None:
            st.retries.append((now, dev.num_alloc_retries))
        while st.retries and st.retries[0][0] < now - window:
            st.retries.popleft()
        retry_rise = rises = 0
        if len(st.retries) >= 2:
            retry_rise = st.retries[-1][1] - min(r for _, r in st.retries)
            rises = sum(1 for (_, a), (_, b) in zip(st.retries, list(st.retries)[1:]) if b > a)
        retrying = rises >= max(1, settings.frag_min_retry_rises)

        gap_ok = False
        gap = share = None
        snap = snapshot_figures(report, dev.device)
        if dev.reserved and dev.allocated is not None:
            gap = dev.reserved - dev.allocated
            share = gap / dev.reserved
            split = dev.inactive_split if snap is None else snap.get("free_split")
            gap_ok = (
                share >= settings.frag_gap_share
                and gap >= settings.frag_min_gap_bytes
                and split is not None
                and split >= settings.frag_inactive_split_min_bytes
                and split >= settings.frag_inactive_split_share * gap
            )
        if gap_ok:
            if st.gap_since is None:
                st.gap_since = now
        else:
            st.gap_since = None
        gap_held = gap_ok and now - st.gap_since >= settings.frag_persist_seconds
        if not gap_held and not retrying:
            return None

        gpu = gpu_for_device(frame, report, dev)
        evidence = []
        if gap is not None:
            evidence.append(
                f"reserved {fmt_bytes(dev.reserved)}, allocated {fmt_bytes(dev.allocated)}: "
                f"gap {fmt_bytes(gap)} ({share:.0%} of reserved)"
            )
        if snap is not None:
            evidence.extend(snapshot_evidence(snap))
        elif dev.inactive_split is not None:
            part = f" ({dev.inactive_split / gap:.0%} of the gap)" if gap else ""
            evidence.append(f"non-releasable (inactive_split) {fmt_bytes(dev.inactive_split)}{part}")
        if gap_held:
            evidence.append(f"for {fmt_duration(now - st.gap_since)}")
        if retrying:
            first = min(r for _, r in st.retries)
            evidence.append(
                f"num_alloc_retries {first} -> {st.retries[-1][1]}, rising at {rises} "
                f"samples in the last {fmt_duration(now - st.retries[0][0])} "
                "(cudaMalloc failed; the cache was flushed and the allocation retried)"
            )
        on = expandable_segments(report.allocator_settings)
        if on:
            evidence.append("PYTORCH_CUDA_ALLOC_CONF: expandable_segments is already on")
            fix = (
                "expandable_segments is already on in this process, so the environment variable "
                "will not help further. Variable-length batches make fragmentation likely: "
                "inspect the allocator snapshot (torch.cuda.memory._record_memory_history(), "
                "then _dump_snapshot(), viewed at pytorch.org/memory_viz) before blaming a leak. "
                + EMPTY_CACHE_NOT_THE_FIX
            )
        else:
            evidence.append(
                "PYTORCH_CUDA_ALLOC_CONF: expandable_segments is not set"
                if on is False
                else "the agent did not report whether expandable_segments is set"
            )
            fix = (
                "Start the process with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: "
                "the allocator then grows its segments instead of leaving free space in "
                f"slivers{recovers_text(snap)}. " + EMPTY_CACHE_NOT_THE_FIX
            )
        if gap_held:
            since = st.gap_since
        else:  # when the counter first rose within the window
            low = min(r for _, r in st.retries)
            since = next(t for t, r in st.retries if r > low)
        # the slivers are the allocator's inactive_split -- the figure the agent panel
        # shows as "inactive split" -- not the whole reserved-allocated gap
        what = (
            f"{fmt_bytes(split)} reserved but free in unusable slivers "
            f"({'inside partly used segments' if snap is not None else 'inactive split'}; "
            f"{fmt_bytes(gap)} reserved but not allocated in all)"
            if gap_held
            else "allocations failing and being retried"
        )
        return Alert(
            kind=AlertKind.FRAGMENTATION,
            severity=WARNING,
            gpu=gpu.index if gpu is not None else None,
            pid=report.pid,
            start_time=report.start_time,
            since=since,
            message=f"{process_name(frame, report.pid, gpu, dev.device)}: {what}",
            evidence=tuple(evidence),
            fix=fix,
            device=dev.device,
            frees=None,
            data={
                "gap": gap,
                "gap_share": share,
                "inactive_split": dev.inactive_split,
                "free_split": snap.get("free_split") if snap else None,
                "expandable_recovers": snap.get("expandable_recovers") if snap else None,
                "retry_rise": retry_rise,
                "retry_rises": rises,
                "expandable_segments": on,
            },
        )
