"""The PyTorch agents tab in a run's first seconds: the time axis fits the data,
each device is named by the GPU it is, and a model on the CPU is said in words
instead of a sliver of a bar."""

from __future__ import annotations

from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport, Frame
from vramscope.core.store import Store
from vramscope.core.units import MiB
from vramscope.sources import simulated
from vramscope.sources.agent_reports import record_reports

from .helpers import shown_agent_panel

T0 = 1_800_000_000.0


def test_the_time_axis_fits_the_first_seconds_and_the_device_names_its_gpu(themed_app, qtbot):
    source = simulated.SimulatedSource(seed=1, start_time=T0)
    store = Store()
    frame = None
    end = int(simulated.TRAIN_START) + 20  # twenty seconds into the run
    for k in range(end + 1):
        frame = record_reports(store, source.sample(T0 + k))
    report = next(r for r in frame.agents if r.pid == source.train.pid(0))
    panel = shown_agent_panel(qtbot, store, frame)
    view = panel.views[report.identity].devices[report.devices[0].device]
    t0, t1 = view.plot.getPlotItem().viewRange()[0]
    assert t1 - t0 < 120  # not a 10-minute axis with a sliver of data at its end
    assert view.title.text().startswith("cuda:0 (GPU 0)")


def test_a_model_on_the_cpu_says_so(themed_app, qtbot):
    report = AgentReport(
        pid=4242,
        start_time=T0,
        time=T0 + 10,
        step=3,
        devices=(AgentDevice(device="cpu", buckets=AgentBuckets(weights=4 * MiB)),),
    )
    panel = shown_agent_panel(qtbot, Store(), Frame(time=T0 + 10, gpus=(), agents=(report,)))
    view = panel.views[report.identity]
    assert not view.devices  # no "cpu" bar drawn as if it were a GPU
    assert "the model is on the CPU (4.0 MiB of weights)" in view.notes.text()
    assert "backward" not in view.notes.text()


def test_the_legend_says_n_a_where_the_areas_draw_nothing_never_an_older_figure():
    import numpy as np

    from vramscope.ui.agent_breakdown import value_at
    from vramscope.ui.agent_device import hold

    t = np.array([1.0, 2.0, 3.0])
    grads = np.array([0.0, 5.0 * MiB, np.nan])  # zeroed, measured, then not known
    assert value_at(t, grads, 3.5) is None  # n/a, not the 5 MiB (nor the 0 B) before it
    assert hold(np.array([3.5]), t, grads)[0] == 0.0  # ... where the area has no height
    assert value_at(t, grads, 2.0) == 5.0 * MiB and value_at(t, grads, 0.5) is None
