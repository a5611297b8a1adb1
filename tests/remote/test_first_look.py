"""The sampler's first look (core/stream/first_look.py): asked with
`stream --devices-first`, the GPUs' own figures come before a slow first pass
has read their processes, marked as not read yet (never "no processes"); the
first whole frame follows as before, and a stream not asked sends none."""

from __future__ import annotations

import json
import os
import select
import threading
import time

import pytest
from hypothesis import given, settings

from remote.test_stream_protocol import frames, json_values
from vramscope.commands.stream import run_stream
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.stream import protocol
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.first_look import devices_from_message, devices_message, is_pending, pending
from vramscope.sources.remote.local_sampler import LocalSamplerSource, SamplerProcess
from vramscope.sources.remote.host_stream import RemoteHost
from vramscope.sources.demo.simulated import SimulatedSource

GiB = 1 << 30


def gpus(processes: bool) -> tuple[GpuSample, ...]:
    out = []
    for g in range(2):
        procs = tuple(
            GpuProcess(pid=4000 + 10 * g + p, used=GiB, info=ProcessInfo(pid=4000 + 10 * g + p, user="ann"))
            for p in range(3)
        )
        out.append(
            GpuSample(
                index=g,
                name="NVIDIA H100",
                total=80 * GiB,
                used=(30 + g) * GiB,
                free=(50 - g) * GiB,
                util_gpu=90,
                temperature=61,
                processes=procs if processes else (),
            )
        )
    return tuple(out)


class SlowBox:
    """Two GPUs whose processes take until ``release`` to read (a big box's first pass)."""

    name, simulated = "nvml", False

    def __init__(self):
        self.release = threading.Event()
        self.passes = 0

    def sample_devices(self, now: float) -> Frame:
        return pending(Frame(time=now, gpus=gpus(processes=False)))

    def sample(self, now: float) -> Frame:
        self.release.wait(20)
        self.passes += 1
        return Frame(time=now, gpus=gpus(processes=True))

    def close(self) -> None:
        self.release.set()


class Streamed:
    """``run_stream`` on a thread, its output read back message by message."""

    def __init__(self, source, **kw):
        r_out, w_out = os.pipe()
        r_in, self._w_in = os.pipe()
        self._out = os.fdopen(r_out, "rb", buffering=0)
        self._decoder = protocol.LineDecoder()
        self._queue: list[dict] = []
        kw = {"interval": 0.2, "enrichers": None, "count": 2, **kw}
        self.thread = threading.Thread(
            target=run_stream,
            args=(source,),
            kwargs={"out": os.fdopen(w_out, "wb"), "inp": os.fdopen(r_in, "rb"), **kw},
            daemon=True,
        )
        self.thread.start()

    def next(self, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while not self._queue:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._out], [], [], max(0.0, left))
            if not ready:
                raise AssertionError("no message in time")
            chunk = os.read(self._out.fileno(), 1 << 16)
            assert chunk, "the stream ended"
            self._queue += self._decoder.feed(chunk)
        return self._queue.pop(0)

    def close(self) -> None:
        os.close(self._w_in)
        self.thread.join(10)
        self._out.close()


def test_the_gpus_come_before_a_slow_first_pass_with_their_processes_marked_pending():
    box = SlowBox()
    stream = Streamed(box, devices_first=True)
    try:
        assert stream.next()[protocol.TYPE] == protocol.HELLO
        first = stream.next()
        assert first[protocol.TYPE] == protocol.DEVICES
        assert box.passes == 0  # the first pass is still reading the processes
        look = devices_from_message(first)
        assert [g.used for g in look.gpus] == [30 * GiB, 31 * GiB]  # the GPUs' real figures
        assert [g.util_gpu for g in look.gpus] == [90, 90]
        assert all(g.processes_pending and g.processes == () for g in look.gpus)
        box.release.set()
        whole = stream.next()
        assert whole[protocol.TYPE] == protocol.FRAME  # then the first frame, whole, as always
        frame, _alerts = FrameAssembler().whole(whole)
        assert [len(g.processes) for g in frame.gpus] == [3, 3] and not is_pending(frame)
    finally:
        box.release.set()
        stream.close()


class BrokenLook(SlowBox):
    def sample_devices(self, now: float) -> Frame:
        raise RuntimeError("NVML hiccup")


@pytest.mark.parametrize(
    "source, asked",
    [
        (SlowBox, False),  # not asked: as before
        (lambda: SimulatedSource(seed=1), True),  # the demo reads no devices apart
        (BrokenLook, True),  # a first look that fails is left out
    ],
)
def test_without_a_first_look_the_first_frame_comes_first_as_before(source, asked):
    box = source()
    if isinstance(box, SlowBox):
        box.release.set()
    stream = Streamed(box, devices_first=asked)
    try:
        assert stream.next()[protocol.TYPE] == protocol.HELLO
        assert stream.next()[protocol.TYPE] == protocol.FRAME
    finally:
        stream.close()


def wire(message: dict) -> dict:
    return json.loads(protocol.encode(message))


HELLO = wire(protocol.hello("box", "1.0", 1.0))
LOOK = wire(devices_message(Frame(time=10.0, gpus=gpus(processes=False))))
WHOLE = wire({protocol.TYPE: protocol.FRAME, "frame": {"time": 11.0, "gpus": []}, "alerts": [], "seq": 1})


def test_the_windows_sampler_shows_the_first_look_until_the_first_frame():
    process = SamplerProcess([], interval=1.0)
    frames = FrameAssembler()
    process._handle(HELLO, frames)
    process._handle(LOOK, frames)
    view = process.snapshot()
    assert process.frames == 1 and view.alerts == ()
    assert is_pending(view.frame) and [g.used for g in view.frame.gpus] == [30 * GiB, 31 * GiB]
    process._handle(WHOLE, frames)
    assert process.snapshot().frame.time == 11.0
    process._handle(LOOK, frames)  # (a late one: the frame held says more)
    assert process.snapshot().frame.time == 11.0 and process.frames == 2
    process._handle(HELLO, frames)  # the sampler started again: its first look is taken
    process._handle(LOOK, frames)
    assert is_pending(process.snapshot().frame) and process.frames == 3


def test_an_ssh_host_skips_a_first_look_like_any_message_it_does_not_know():
    host = RemoteHost("lab")
    host._handle(HELLO, FrameAssembler())
    host._handle(LOOK, FrameAssembler())
    assert host.snapshot().frame is None and host.refused == 0


def test_a_first_look_that_does_not_fit_is_dropped_and_said():
    process = SamplerProcess([], interval=1.0)
    process._handle(HELLO, FrameAssembler())
    process._handle({protocol.TYPE: protocol.DEVICES, "frame": {"gpus": "x"}}, FrameAssembler())
    assert process.snapshot().frame is None and process.refused == 1


def test_a_slow_first_pass_after_the_first_look_is_waited_for_not_called_a_stopped_sampler():
    source = LocalSamplerSource([], interval=0.1, name="nvml")
    process, frames = source.process, FrameAssembler()
    process._handle(HELLO, frames)
    process._handle(LOOK, frames)
    assert is_pending(source.sample(time.time()))
    late = threading.Timer(1.6, lambda: process._handle(WHOLE, frames))  # over 2 intervals + 1 s
    late.start()
    try:
        frame = source.sample(time.time())
    finally:
        late.cancel()
    assert frame.error is None and frame.time == 11.0


@settings(max_examples=100)
@given(frames)
def test_any_frame_s_first_look_reads_back_as_its_gpus_with_processes_pending(frame):
    back = devices_from_message(wire(devices_message(frame)))
    assert back == pending(frame)
    assert all(g.processes == () and g.processes_pending for g in back.gpus)
    assert [g.used for g in back.gpus] == [g.used for g in frame.gpus]


@given(json_values)
def test_garbage_in_a_devices_message_is_a_value_error_never_a_crash(junk):
    try:
        frame = devices_from_message({protocol.TYPE: protocol.DEVICES, "frame": junk})
    except ValueError:
        return
    assert all(g.processes_pending for g in frame.gpus)
