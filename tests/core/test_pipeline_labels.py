"""The process labels the timelines read: kept while the store holds the process,
forgotten once it has evicted it -- a window left open on a box where jobs come
and go must not grow (or copy) labels without end."""

from __future__ import annotations

from remote.test_stream_deltas import read
from vramscope.core.flow.pipeline import LABELS_KEPT_MIN, Pipeline
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import Store
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer
from vramscope.core.units import GiB


class Churning:
    """One long training run (pid 100) and, each pass, a new short job that ends at once."""

    name, simulated = "test", False

    def __init__(self):
        self.n = 0

    def sample(self, now):
        self.n += 1
        run = GpuProcess(
            pid=100, used=GiB, info=ProcessInfo(pid=100, start_time=1.0, cmdline=("python", "train.py"))
        )
        job = GpuProcess(
            pid=1000 + self.n,
            used=GiB,
            info=ProcessInfo(pid=1000 + self.n, start_time=2.0, cmdline=("python", f"job{self.n}.py")),
        )
        return Frame(time=now, gpus=(GpuSample(index=0, total=24 * GiB, used=2 * GiB, processes=(run, job)),))

    def close(self):
        pass


def test_labels_of_processes_the_store_evicted_are_forgotten_and_the_rest_kept_in_order():
    cap = 64
    pipeline = Pipeline(Churning(), store=Store(max_series=cap))
    passes = 3 * LABELS_KEPT_MIN
    for _ in range(passes):
        pipeline.sample_once()
    labels = pipeline.labels()
    assert len(labels) <= 2 * LABELS_KEPT_MIN + 2  # not one per process ever seen (3,073)
    assert pipeline.labels_generation >= 1
    idents = list(labels)
    assert idents[0][0] == 100 and labels[idents[0]] == "train.py (100)"  # the run, first seen, first
    latest = 1000 + passes
    assert labels[idents[-1]] == f"job{passes}.py ({latest})"  # the newest job is labelled
    held = {(k[2], k[3]) for k in pipeline.store.keys(("proc",))}
    assert all(i in held for i in idents[-cap // 2 :])  # the store's recent ones kept
    assert list(pipeline.kin()) == [i for i in idents if i in pipeline.kin()]


def test_a_box_without_churn_never_drops_a_label():
    pipeline = Pipeline(Churning(), store=Store(max_series=100_000))
    for _ in range(LABELS_KEPT_MIN + 10):
        pipeline.sample_once()
    assert len(pipeline.labels()) == LABELS_KEPT_MIN + 11  # every process is still in the history


class Streamed:
    """Frames as a window gets them from its sampler process: through the stream's deltas
    (each GPU's processes held as columns), one per pass."""

    name, simulated = "test", False

    def __init__(self, frames):
        self._frames = iter(frames)
        self._writer, self._reader = FrameDiffer(keyframe_every=4), FrameAssembler()

    def sample(self, now):
        frame, _alerts = read(self._reader, self._writer.message(next(self._frames), []))
        return frame

    def close(self):
        pass


def _box(t: float, used: int, procs) -> Frame:
    """procs: [(pid, command line or None: not described yet)] on GPU 0; pid 900 on GPU 1."""
    listed = tuple(
        GpuProcess(
            pid=pid,
            used=used,
            info=None if cmd is None else ProcessInfo(pid=pid, start_time=1.0, cmdline=("python", cmd)),
        )
        for pid, cmd in procs
    )
    other = GpuProcess(
        pid=900, used=used, info=ProcessInfo(pid=900, start_time=1.0, cmdline=("python", "serve.py"))
    )
    return Frame(
        time=t,
        gpus=(
            GpuSample(index=0, total=24 * GiB, used=used, processes=listed),
            GpuSample(index=1, total=24 * GiB, used=used, processes=(other,)),
        ),
    )


def test_labels_read_from_a_stream_follow_what_each_frame_says():
    frames = (
        [_box(t, t * GiB, [(100, "train.py"), (101, None)]) for t in range(1, 4)]  # 101 not described yet
        + [_box(t, t * GiB, [(100, "train.py"), (101, "eval.py")]) for t in range(4, 7)]
        + [_box(t, t * GiB, [(100, "train.py"), (101, "eval.py"), (102, "bench.py")]) for t in range(7, 10)]
    )
    pipeline = Pipeline(Streamed(frames), store=Store())
    for _ in range(3):
        pipeline.sample_once()
    assert pipeline.labels() == {
        (100, 1.0): "train.py (100)",
        (101, None): "pid 101",
        (900, 1.0): "serve.py (900)",
    }
    for _ in range(3):
        pipeline.sample_once()
    assert pipeline.labels()[(101, 1.0)] == "eval.py (101)"
    for _ in range(3):
        pipeline.sample_once()
    assert pipeline.labels()[(102, 1.0)] == "bench.py (102)"
    assert list(pipeline.labels())[-2:] == [(101, 1.0), (102, 1.0)]
