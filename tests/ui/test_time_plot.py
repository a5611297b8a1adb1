"""A GPU timeline's plot draws a long session peak-downsampled (pyqtgraph's
PlotItem used to switch that off for every curve added to it)."""

from __future__ import annotations

import numpy as np

from vramscope.core.samples import Frame, GpuSample
from vramscope.core.store.store import Store, gpu_key
from vramscope.core.units import GiB
from vramscope.ui.qt.pens import ColourBook
from vramscope.ui.timeline.gpu_timeline import GpuTimeline

from .frames import T0

TOTAL = 80 * GiB
SPIKE = 3_333  # the one second the card was nearly full


def _frame(k: int) -> Frame:
    used = TOTAL - GiB if k == SPIKE else (10 + k % 40) * GiB  # a sawtooth: no flat run to merge
    gpu = GpuSample(index=0, name="NVIDIA H100", uuid="GPU-0", total=TOTAL, used=used, free=TOTAL - used)
    return Frame(time=T0 + k, gpus=(gpu,))


def test_a_long_session_is_drawn_at_its_pixels_with_its_peak(qtbot):
    store = Store()
    for k in range(6_000):  # 100 minutes at 1 s
        store.append(_frame(k))
    timeline = GpuTimeline(0, ColourBook())
    qtbot.addWidget(timeline)
    timeline.resize(520, 220)  # a view of ~220 px: ~27 samples a pixel
    timeline.show()
    qtbot.waitExposed(timeline)
    now = T0 + 5_999
    timeline.update_from(store, None, now, {})  # the whole session
    t, v = store.series(gpu_key(0, "used"))
    x, y = timeline.used_curve.getData()
    width = timeline.plot.vb.width()
    assert 0 < width < 300
    # pyqtgraph keeps ~5 samples a pixel, then 2 (the low and the high) for each 1 of them
    assert len(x) <= 12 * width and len(x) < len(t) / 2
    assert np.nanmax(y) * GiB == v.max() == TOTAL - GiB  # the spike is still drawn
    pixel = (t[-1] - t[0]) / width
    assert x[0] < t[0] + pixel and x[-1] > t[-1] - pixel  # from the first second to the last
