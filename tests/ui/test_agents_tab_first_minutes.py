"""The PyTorch agents tab in a run's first seconds: the time axis fits the data,
each device is named by the GPU it is, and a model on the CPU is said in words
instead of a sliver of a bar."""

from __future__ import annotations

from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport, Frame
from vramscope.core.store.store import Store
from vramscope.core.units import MiB
from vramscope.sources.demo import simulated
from vramscope.sources.agents.agent_reports import record_reports

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


def test_a_run_on_the_cpu_shows_its_buckets_and_modules_and_says_what_needs_cuda(
    themed_app, qtbot, artifacts_dir
):
    from vramscope.core.agent_figures.module_figures import ModuleFigures
    from vramscope.ui.agents.agent_panel import CUDA_ONLY

    modules = (
        ModuleFigures("encoder", None, 40 * MiB, 40 * MiB, 80 * MiB, 12 * MiB, 3, device="cpu"),
        ModuleFigures("encoder.0", "encoder", 20 * MiB, 20 * MiB, 40 * MiB, 6 * MiB, 3, device="cpu"),
        ModuleFigures("head", None, 4 * MiB, 4 * MiB, 8 * MiB, 1 * MiB, 3, device="cpu"),
    )
    store, frame = Store(), None
    for k in range(20):
        buckets = AgentBuckets(
            weights=44 * MiB, gradients=44 * MiB, optimizer_state=88 * MiB, other_allocated=12 * MiB
        )
        report = AgentReport(
            pid=4242,
            start_time=T0,
            time=T0 + k,
            step=k,
            devices=(AgentDevice(device="cpu", buckets=buckets),),
            modules=modules,
        )
        frame = record_reports(store, Frame(time=T0 + k, gpus=(), agents=(report,)))
    panel = shown_agent_panel(qtbot, store, frame)
    view = panel.views[report.identity]
    assert list(view.devices) == ["cpu"]  # its buckets drawn (host memory)
    legend = view.devices["cpu"].bucket_legend.text()
    assert "weights" in legend and "88.0 MiB" in legend  # the optimizer state, at the latest step
    assert view.modules.isVisible() and set(view.modules.items) == {"encoder", "encoder.0", "head"}
    assert "the model is on the CPU (44.0 MiB of weights)" in view.notes.text()
    assert CUDA_ONLY in view.notes.text() and "not drawn" not in view.notes.text()
    assert list(view.details.pages) == ["modules"]  # no OOM or segments tab to wait on
    panel.grab().save(str(artifacts_dir / "agents_cpu_run.png"))


def test_the_legend_says_n_a_where_the_areas_draw_nothing_never_an_older_figure():
    import numpy as np

    from vramscope.ui.agents.agent_breakdown import value_at
    from vramscope.ui.agents.step_arrays import hold

    t = np.array([1.0, 2.0, 3.0])
    grads = np.array([0.0, 5.0 * MiB, np.nan])  # zeroed, measured, then not known
    assert value_at(t, grads, 3.5) is None  # n/a, not the 5 MiB (nor the 0 B) before it
    assert hold(np.array([3.5]), t, grads)[0] == 0.0  # ... where the area has no height
    assert value_at(t, grads, 2.0) == 5.0 * MiB and value_at(t, grads, 0.5) is None
