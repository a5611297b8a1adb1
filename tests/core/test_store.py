"""The store: one series per GPU metric and per process identity, bounded."""

from __future__ import annotations

import math
import threading

from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import Store, gpu_key, proc_key
from vramscope.core.units import GiB


def _proc(pid, used, start=1000.0):
    return GpuProcess(pid=pid, used=used, info=ProcessInfo(pid=pid, start_time=start))


def _frame(t, procs=(), used=5 * GiB, index=0, util=None):
    return Frame(
        time=t,
        gpus=(
            GpuSample(
                index=index,
                total=24 * GiB,
                used=used,
                free=19 * GiB,
                reserved=None,
                util_gpu=util,
                processes=tuple(procs),
            ),
        ),
    )


def test_series_per_gpu_metric_with_none_as_nan():
    store = Store()
    store.append(_frame(10.0, util=40))
    store.append(_frame(11.0, used=6 * GiB, util=None))
    t, v = store.series(gpu_key(0, "used"))
    assert t.tolist() == [10.0, 11.0]
    assert v.tolist() == [5 * GiB, 6 * GiB]
    _, util = store.series(gpu_key(0, "util_gpu"))
    assert util[0] == 40 and math.isnan(util[1])
    assert store.last_value(gpu_key(0, "util_gpu")) is None  # n/a stays n/a
    assert store.last_value(gpu_key(0, "used")) == 6 * GiB
    _, reserved = store.series(gpu_key(0, "reserved"))
    assert all(math.isnan(x) for x in reserved)  # v1-only driver: no figure, not 0
    assert store.latest.time == 11.0 and store.first_time == 10.0 and store.version == 2


def test_a_gpu_whose_processes_are_not_read_yet_has_no_process_sum_not_a_zero():
    import dataclasses

    from vramscope.core.store.store import PROCESSES_USED

    store = Store()
    first_look = _frame(10.0)
    gpu = dataclasses.replace(first_look.gpus[0], processes_pending=True)
    store.append(dataclasses.replace(first_look, gpus=(gpu,)))
    store.append(_frame(11.0, procs=[_proc(1, 2 * GiB)]))
    t, v = store.series(gpu_key(0, PROCESSES_USED))
    assert t.tolist() == [10.0, 11.0]
    assert math.isnan(v[0]) and v[1] == 2 * GiB  # n/a while being read, never a dip to 0
    assert store.series(gpu_key(0, "used"))[1].tolist() == [5 * GiB, 5 * GiB]  # the GPU's own figures


def test_unknown_series_is_empty():
    t, v = Store().series(("gpu", 7, "used"))
    assert len(t) == 0 and len(v) == 0


def test_a_reused_pid_is_a_new_series():
    store = Store()
    store.append(_frame(1.0, [_proc(4242, 1 * GiB, start=100.0)]))
    store.append(_frame(2.0, [_proc(4242, 1 * GiB, start=100.0)]))
    # the old process exited; the kernel handed PID 4242 to a new one
    store.append(_frame(3.0, [_proc(4242, 7 * GiB, start=250.0)]))
    keys = store.process_keys(0)
    assert sorted(keys) == sorted([proc_key(0, 4242, 100.0), proc_key(0, 4242, 250.0)])
    old_t, old_v = store.series(proc_key(0, 4242, 100.0))
    new_t, new_v = store.series(proc_key(0, 4242, 250.0))
    assert old_t.tolist() == [1.0, 2.0] and old_v.tolist() == [GiB, GiB]
    assert new_t.tolist() == [3.0] and new_v.tolist() == [7 * GiB]


def test_process_series_are_per_gpu_and_na_memory_stays_nan():
    store = Store()
    frame = Frame(
        time=5.0,
        gpus=(
            GpuSample(index=0, processes=(_proc(10, 2 * GiB),)),
            GpuSample(index=1, processes=(_proc(10, None),)),
        ),
    )
    store.append(frame)
    assert store.series(proc_key(0, 10, 1000.0))[1].tolist() == [2 * GiB]
    assert math.isnan(store.series(proc_key(1, 10, 1000.0))[1][0])
    assert store.last_value(proc_key(1, 10, 1000.0)) is None


def test_eviction_keeps_the_series_count_bounded_and_drops_the_stalest():
    store = Store(fine_points=16, coarse_points=16, max_series=40)
    for i in range(200):  # a new short-lived process every second
        store.append(_frame(float(i), [_proc(1000 + i, GiB, start=float(i))]))
        assert store.series_count() <= 40
    keys = store.keys()
    for metric in ("used", "total", "util_gpu"):
        assert gpu_key(0, metric) in keys  # live GPU series are never the ones dropped
    assert proc_key(0, 1199, 199.0) in keys
    assert proc_key(0, 1000, 0.0) not in keys


def test_a_box_with_more_live_processes_than_the_cap_keeps_them_all():
    """Live series are never evicted (that would recreate them every frame);
    the ended ones go first once there are any."""
    store = Store(fine_points=16, coarse_points=16, max_series=20)
    live = [_proc(2000 + i, GiB, start=1.0) for i in range(30)]
    for t in range(3):
        store.append(_frame(float(t), live))
    assert len(store.process_keys(0)) == 30
    _, v = store.series(proc_key(0, 2000, 1.0))
    assert len(v) == 3  # not recreated: the whole history is there
    store.append(_frame(3.0, live[:10]))  # twenty of them exit
    store.append(_frame(4.0, live[:10]))
    pids = {k[2] for k in store.process_keys(0)}
    assert set(range(2000, 2010)) <= pids  # the live ones stay
    assert store.series_count() <= 20  # ended ones went until under the cap


def test_record_adds_any_series():
    store = Store()
    store.record(("agent", 55, 1.0, "cuda:0", "allocated"), 3.0, 123)
    store.record(("agent", 55, 1.0, "cuda:0", "allocated"), 4.0, None)
    t, v = store.series(("agent", 55, 1.0, "cuda:0", "allocated"))
    assert t.tolist() == [3.0, 4.0] and v[0] == 123 and math.isnan(v[1])
    assert store.keys(("agent",)) == [("agent", 55, 1.0, "cuda:0", "allocated")]


def test_listeners_get_every_frame_until_unsubscribed():
    store = Store()
    got = []

    def listener(frame):
        # called after the frame is in: a detector can read its own series
        got.append((frame.time, store.last_value(gpu_key(0, "used"))))

    store.listeners.subscribe(listener)
    store.append(_frame(1.0))
    store.append(_frame(2.0, used=GiB))
    store.listeners.unsubscribe(listener)
    store.append(_frame(3.0))
    assert got == [(1.0, 5 * GiB), (2.0, GiB)]


def test_series_since_limits_the_window():
    store = Store()
    for i in range(100):
        store.append(_frame(float(i), used=i))
    t, v = store.series(gpu_key(0, "used"), since=90.0)
    assert t.tolist() == [float(i) for i in range(89, 100)]


def test_reads_during_writes_see_whole_series():
    store = Store(fine_points=64, coarse_points=64)
    stop = threading.Event()
    bad = []

    def writer():
        i = 0
        while not stop.is_set():
            store.append(_frame(float(i), used=i))
            i += 1

    th = threading.Thread(target=writer)
    th.start()
    try:
        for _ in range(2000):
            t, v = store.series(gpu_key(0, "used"))
            if len(t) != len(v) or (len(t) and not (t[-64:] == v[-64:]).all()):
                bad.append((t, v))
    finally:
        stop.set()
        th.join()
    assert not bad


def test_nbytes_stays_fixed_after_a_day_of_frames():
    store = Store(fine_points=100, coarse_step=10.0, coarse_points=200)
    for i in range(0, 5000):
        store.append(_frame(float(i), [_proc(1, GiB)]))
    full = store.nbytes
    for i in range(5000, 10000):
        store.append(_frame(float(i), [_proc(1, GiB)]))
    assert store.nbytes == full
