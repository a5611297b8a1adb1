"""A GPU nothing runs on, beside one that trains: both plots drawn, however long
the session (its stacked view has no band, and its times are thinned all the same)."""

from __future__ import annotations

from vramscope.core.samples import Frame, GpuProcess, GpuSample
from vramscope.core.units import GiB

from .frames import T0, TRAIN

TOTAL = 80 * GiB


def _two_gpus(k: int) -> Frame:
    """GPU 0 idle (nothing ever runs on it), GPU 1 training."""
    idle = GpuSample(
        index=0, name="NVIDIA H100", uuid="GPU-0", total=TOTAL, used=GiB // 2, free=TOTAL - GiB // 2
    )
    train = GpuProcess(pid=4242, used=(20 + k % 7) * GiB, info=TRAIN)
    busy = GpuSample(
        index=1, name="NVIDIA H100", uuid="GPU-1", total=TOTAL, used=train.used + GiB, processes=(train,)
    )
    return Frame(time=T0 + k, gpus=(idle, busy))


def test_an_idle_gpu_beside_a_busy_one_after_ten_minutes(make_window):
    """The stacked view of a GPU nothing runs on, over more seconds than it has
    pixels, used to fail (no band to thin) and leave the next GPU's plot undrawn."""
    frames = [_two_gpus(k) for k in range(900)]
    w = make_window(frames, window="10m")
    for index in (0, 1):
        x, _ = w.gpu_panel.timelines[index].used_curve.getData()
        assert x[-1] == frames[-1].time
    assert w.gpu_panel.timelines[1].stack.order  # the training run's band
