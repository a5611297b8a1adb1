"""Process series held as columns answer exactly what one TieredRing per
process answered (the store before issue 28): the same points, peaks, order,
evictions and reopened sessions -- and cost no object per process."""

from __future__ import annotations

import gc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from remote.test_stream_deltas import read
from vramscope.core.store.ring import TieredRing
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import GPU_METRICS, PROCESSES_USED, Store, gpu_key, proc_key
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer

FINE, STEP, COARSE = 6, 4.0, 5  # small tiers: the fine ring wraps and the coarse tier fills within a test


class OneRingPerSeries:
    """The store's series as they were kept before: a TieredRing per key, the
    stalest ended series evicted first over the cap."""

    def __init__(self, max_series: int):
        self.rings: dict = {}
        self.max_series = max_series

    def ring(self, key) -> TieredRing:
        return self.rings.setdefault(key, TieredRing(FINE, STEP, COARSE))

    def append(self, frame: Frame) -> None:
        written = 0
        for gpu in frame.gpus:
            for metric in GPU_METRICS:
                self.ring(gpu_key(gpu.index, metric)).append(frame.time, getattr(gpu, metric))
            for p in gpu.processes:
                self.ring(proc_key(gpu.index, *p.identity)).append(frame.time, p.used)
            in_use = sum(p.used for p in gpu.processes if p.used is not None)
            self.ring(gpu_key(gpu.index, PROCESSES_USED)).append(frame.time, in_use)
            written += len(GPU_METRICS) + 1 + len(gpu.processes)
        if len(self.rings) > self.max_series and len(self.rings) > written:
            ended = [(r.last_time() or 0.0, k) for k, r in self.rings.items()]
            ended = [e for e in ended if e[0] < frame.time]
            ended.sort(key=lambda e: e[0])
            for _, key in ended[: len(self.rings) - self.max_series]:
                del self.rings[key]


def _frame(t: float, gpus: dict) -> Frame:
    """gpus: index -> [(pid, start_time, used or None)]."""
    return Frame(
        time=t,
        gpus=tuple(
            GpuSample(
                index=g,
                total=80,
                used=sum(u or 0 for _, _, u in procs),
                processes=tuple(
                    GpuProcess(pid=pid, used=used, info=ProcessInfo(pid=pid, start_time=start))
                    for pid, start, used in procs
                ),
            )
            for g, procs in gpus.items()
        ),
    )


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b)) and len(a[0]) == len(b[0])


def _assert_same(store: Store, old: OneRingPerSeries, now: float) -> None:
    assert store.keys() == list(old.rings)  # same series, in the same order
    assert store.series_count() == len(old.rings)
    for key, ring in old.rings.items():
        for since in (None, now - 3.0, now - 13.0, now - 40.0):
            assert _same(store.series(key, since), ring.arrays(since)), (key, since)
        last = ring.last()
        assert store.last_value(key) == (None if last is None or np.isnan(last[1]) else last[1])
    for g in (0, 1):
        keys = [k for k in old.rings if k[0] == "proc" and k[1] == g]
        assert store.process_keys(g) == keys
        points = store.process_points(g)
        assert list(points) == keys
        for k in keys:
            assert np.array_equal(points[k], old.rings[k].last(), equal_nan=True)
    assert store.nbytes == sum(r.nbytes for r in old.rings.values())


# a process: (pid, start time); pid 7 comes back with a new start time (PID reuse)
PROCESSES = [(5, 100.0), (6, 100.0), (7, 100.0), (7, 250.0), (8, 300.0)]
frames = st.lists(
    st.tuples(
        st.sampled_from([0.5, 1.0, 1.0, 3.0, 9.0]),  # the step to the frame
        st.lists(  # which processes are on which GPU, and their figure (None: n/a)
            st.tuples(
                st.integers(0, 1),
                st.sampled_from(PROCESSES),
                st.one_of(st.none(), st.integers(0, 10**10)),
            ),
            max_size=6,
        ),
    ),
    min_size=1,
    max_size=40,
)


def _frames(steps):
    t = 1000.0
    for gap, procs in steps:
        t += gap
        gpus: dict = {0: [], 1: []}
        for g, (pid, start), used in procs:
            gpus[g].append((pid, start, used))
        yield _frame(t, gpus)


def _feed_both(store: Store, old: OneRingPerSeries, frames) -> None:
    for frame in frames:
        store.append(frame)
        old.append(frame)
        _assert_same(store, old, frame.time)


@settings(max_examples=120, deadline=None)
@given(steps=frames, max_series=st.sampled_from([16, 20, 4096]))
def test_processes_that_come_and_go_read_as_with_one_ring_each(steps, max_series):
    store = Store(fine_points=FINE, coarse_step=STEP, coarse_points=COARSE, max_series=max_series)
    old = OneRingPerSeries(max_series)
    _feed_both(store, old, _frames(steps))


# the same processes for a few frames in a row, their figures moving (what a stream reader
# hands the store most of the time: the slots of the last frame again, core/store/store.py)
steady_runs = st.lists(
    st.tuples(
        st.sampled_from([0.5, 1.0, 3.0, 9.0]),
        st.lists(
            st.tuples(
                st.integers(0, 1),
                st.sampled_from(PROCESSES),
                st.one_of(st.none(), st.integers(0, 10**10)),
            ),
            max_size=6,
        ),
        st.integers(1, 4),  # frames in a row
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=120, deadline=None)
@given(runs=steady_runs, max_series=st.sampled_from([10, 16, 4096]))
def test_processes_read_from_a_stream_read_as_with_one_ring_each(runs, max_series):
    """Frames as the window gets them from its sampler: through the stream's deltas,
    their processes held as columns."""
    store = Store(fine_points=FINE, coarse_step=STEP, coarse_points=COARSE, max_series=max_series)
    old = OneRingPerSeries(max_series)
    writer, reader = FrameDiffer(keyframe_every=5), FrameAssembler()
    steps = [
        (gap if k == 0 else 1.0, [(g, p, u if u is None else u + k) for g, p, u in procs])
        for gap, procs, n in runs
        for k in range(n)
    ]
    for frame in _frames(steps):
        got, _alerts = read(reader, writer.message(frame, []))
        assert got == frame
        store.append(got)
        old.append(frame)
        _assert_same(store, old, frame.time)


def test_a_long_lived_process_keeps_its_peaks_after_the_fine_ring_wraps():
    store = Store(fine_points=FINE, coarse_step=STEP, coarse_points=COARSE)
    old = OneRingPerSeries(4096)
    sent = {}
    for i in range(60):
        used = sent[2000.0 + i] = None if i % 11 == 3 else (i * 37) % 50
        frame = _frame(2000.0 + i, {0: [(9, 1.0, used), (10, 1.0, 5)], 1: []})
        store.append(frame)
        old.append(frame)
    _assert_same(store, old, 2059.0)
    t, v = store.series(proc_key(0, 9, 1.0))
    spanned = [u for at, u in sent.items() if at >= (t[0] // STEP) * STEP and u is not None]
    assert len(spanned) > FINE and np.nanmax(v) == max(spanned)  # peaks the fine ring dropped are drawn
    assert len(t) <= FINE + COARSE  # bounded: raw points + bucket peaks


@settings(max_examples=60, deadline=None)
@given(steps=frames, data=st.data())
def test_a_reopened_session_reads_and_goes_on_as_with_one_ring_each(steps, data):
    """Rings filled by the session loader (new_ring + load + install) become
    slots that answer, and take new frames, as the rings did."""
    store = Store(fine_points=FINE, coarse_step=STEP, coarse_points=COARSE)
    old = OneRingPerSeries(4096)
    rings = {}
    for pid, start in PROCESSES[:3]:
        n = data.draw(st.integers(1, 9))
        ft = 900.0 + np.arange(n, dtype=float)
        fv = np.array(data.draw(st.lists(st.integers(0, 99), min_size=n, max_size=n)), dtype=float)
        ct, cv = ft[::2].copy(), fv[::2].copy()
        for target in (rings, old.rings):
            ring = store.new_ring() if target is rings else TieredRing(FINE, STEP, COARSE)
            ring.load(ft, fv, ct, cv)
            target[proc_key(0, pid, start)] = ring
    store.install(rings, None, 900.0)
    _assert_same(store, old, 910.0)
    _feed_both(store, old, _frames(steps))


def test_a_session_installed_over_live_series_replaces_their_history():
    store = Store(fine_points=FINE, coarse_step=STEP, coarse_points=COARSE)
    store.append(_frame(10.0, {0: [(5, 1.0, 3)]}))
    ring = store.new_ring()
    ring.load(np.array([1.0, 2.0]), np.array([7.0, 8.0]), np.array([1.0]), np.array([8.0]))
    store.install({proc_key(0, 5, 1.0): ring}, None, 1.0)
    assert store.series(proc_key(0, 5, 1.0))[1].tolist() == [7.0, 8.0]
    assert store.process_keys(0) == [proc_key(0, 5, 1.0)]  # still one series, not two
    assert store.first_time == 1.0


def test_an_evicted_process_slot_serves_a_new_process_without_its_history():
    store = Store(fine_points=FINE, coarse_step=STEP, coarse_points=COARSE, max_series=9)
    for i in range(30):
        store.append(_frame(float(i), {0: [(100 + i, float(i), 1000 + i)]}))  # one short job a second
    keys = store.process_keys(0)
    assert len(keys) == 9 - len(GPU_METRICS) - 1
    for k in keys:
        t, v = store.series(k)
        assert t.tolist() == [float(k[3])] and v.tolist() == [1000 + k[3]]  # its own point, nothing older


def test_processes_add_no_object_a_full_garbage_collection_walks():
    """16 GPUs x 1,024 processes: the window's full collections walk every
    tracked object; the store's process series add none per process."""
    gpus = {g: [(10_000 + g * 1024 + p, 5.0, p) for p in range(1024)] for g in range(16)}
    frames = [_frame(1.0 + i, gpus) for i in range(3)]
    gc.collect()
    before = len(gc.get_objects())
    store = Store()
    for frame in frames:
        store.append(frame)
    gc.collect()
    added = len(gc.get_objects()) - before
    assert store.series_count() == 16 * 1024 + 16 * (len(GPU_METRICS) + 1)
    assert added < 16 * (len(GPU_METRICS) + 1) + 100  # the GPU series' rings, a few dicts and lists
