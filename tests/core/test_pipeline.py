"""The one pipeline: stages in a fixed order, a failing stage isolated and shown."""

from __future__ import annotations

import time

from vramscope.core.flow.monitor import Monitor
from vramscope.core.flow.pipeline import Pipeline
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import (
    STAGE_DIAGNOSTICS,
    STAGE_LABELS,
    STAGE_OTHER,
    STAGE_RECORDER,
    Store,
)
from vramscope.core.units import GiB


class Counting:
    """A source whose n-th pass has n GiB in use on one GPU."""

    name, simulated = "test", False

    def __init__(self):
        self.n = 0

    def sample(self, now):
        self.n += 1
        proc = GpuProcess(
            pid=4242,
            used=self.n * GiB,
            info=ProcessInfo(pid=4242, start_time=1.0, cmdline=("python", "train.py")),
        )
        return Frame(
            time=now, gpus=(GpuSample(index=0, total=24 * GiB, used=self.n * GiB, processes=(proc,)),)
        )

    def close(self):
        pass


def test_stages_run_in_their_order_whatever_the_subscription_order():
    store = Store()
    seen = []
    store.listeners.subscribe(lambda f: seen.append("other"))
    store.listeners.subscribe(lambda f: seen.append("recorder"), stage=STAGE_RECORDER)
    store.listeners.subscribe(lambda f: seen.append("diagnostics"), stage=STAGE_DIAGNOSTICS)
    store.listeners.subscribe(lambda f: seen.append("labels"), stage=STAGE_LABELS)
    store.append(Frame(time=1.0))
    assert seen == ["labels", "diagnostics", "recorder", "other"]


def test_the_recorder_stage_sees_the_alerts_of_the_frame_it_writes():
    """The journal reads the engine's alerts: they must be this frame's, even
    when the recorder subscribed before the engine did."""
    store = Store()
    journaled = []

    def recorder(frame):
        journaled.append((frame.time, engine.version))

    store.listeners.subscribe(recorder, stage=STAGE_RECORDER)
    monitor = Monitor.build(Counting(), store=store, actions=False)
    engine = monitor.engine
    monitor.pipeline.sample_once()
    monitor.pipeline.sample_once()
    assert [v for _, v in journaled] == [1, 2]


def test_a_failing_listener_is_isolated_counted_and_shown_on_the_next_frame():
    pipeline = Pipeline(Counting())
    after = []

    def broken(frame):
        raise OSError(28, "No space left on device")

    pipeline.subscribe(broken, STAGE_RECORDER)
    pipeline.subscribe(after.append, STAGE_OTHER)
    first = pipeline.sample_once()
    assert first.notices == ()
    assert [f.time for f in after] == [first.time]  # the later stage still ran
    assert pipeline.store.listeners.listener_failures == 1
    second = pipeline.sample_once()
    assert len(second.notices) == 1
    assert "broken" in second.notices[0] and "No space left on device" in second.notices[0]
    assert pipeline.store.latest is second
    assert "No space left on device" in pipeline.trouble()
    assert pipeline.trouble().endswith("(1 failure so far)")
    # the labels stage kept working all along
    assert list(pipeline.labels().values()) == ["train.py (4242)"]


def test_the_sampler_thread_survives_a_listener_that_always_raises():
    pipeline = Pipeline(Counting(), interval=0.1)

    def always(frame):
        raise ValueError("boom")

    pipeline.subscribe(always, STAGE_OTHER)
    pipeline.start()
    try:
        deadline = time.monotonic() + 5.0
        while pipeline.sampler.passes < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pipeline.sampler.running
        assert pipeline.sampler.passes >= 4
    finally:
        pipeline.close()
    latest = pipeline.store.latest
    assert latest.gpus[0].used == pipeline.sampler.passes * GiB  # every pass reached the store
    assert any("boom" in n for n in latest.notices)
    assert pipeline.sampler.failure is None


def test_a_store_that_raises_does_not_end_sampling():
    pipeline = Pipeline(Counting())
    real_append = pipeline.store.append
    calls = []

    def flaky(frame):
        calls.append(frame)
        if len(calls) == 1:
            raise MemoryError("ring allocation failed")
        real_append(frame)

    pipeline.store.append = flaky
    pipeline.sample_once()
    frame = pipeline.sample_once()
    assert any("ring allocation failed" in n for n in frame.notices)
    assert pipeline.store.latest is frame


def test_a_failing_enricher_is_named_on_the_next_frame():
    class AgentClientStub:
        def __call__(self, frame):
            raise RuntimeError("socket vanished")

    pipeline = Pipeline(Counting(), enrichers=[AgentClientStub()])
    first = pipeline.sample_once()
    assert first.gpus[0].used == GiB  # the frame still goes through, unenriched
    assert any("AgentClientStub" in n and "socket vanished" in n for n in first.notices)
