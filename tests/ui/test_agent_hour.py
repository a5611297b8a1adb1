"""The PyTorch agents tab over an hour of training (steps of 1 s and of 0.1 s):
phase markers at most one per few pixels, no step comb, the areas the
breakdown at each step's real peak (its highest phase peak) rather than
wherever each sample fell in its step, and the bars the newest step's
breakdown at that peak."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vramscope.agent.protocol import TRAINING_PHASES, Phase
from vramscope.core.agent_figures.agent_keys import phase_metric, phase_peak_metric
from vramscope.core.store.store import Store
from vramscope.core.units import fmt_bytes
from vramscope.sources.demo import simulated
from vramscope.sources.agents.agent_reports import record_reports
from vramscope.sources.demo.demo_runs import ScriptedRun
from vramscope.ui.agents.agent_device import ENVELOPE_NOTE, MARK_PX
from vramscope.ui.agents.agent_panel import AgentPanel
from vramscope.ui.agents.agent_texts import BUCKETS, agent_key, peak_title

T0 = 1_800_000_000.0
HOUR = 3600
ACTIVATIONS = [f for f, _ in BUCKETS].index("other_allocated")


def _an_hour_of(period: float):
    """The demo's train.py, stepping every ``period`` s, sampled every second for an hour."""
    source = simulated.SimulatedSource(seed=1, start_time=T0)
    source.train = ScriptedRun(
        dataclasses.replace(source.train.s, period=period),
        source.noise,
        first_start=simulated.TRAIN_START,
        hostname=simulated.HOSTNAME,
    )
    store = Store()
    frame = None
    for k in range(HOUR + 1):
        frame = record_reports(store, source.sample(T0 + k))
    (report,) = [r for r in frame.agents if r.pid == source.train.pid(0)]
    return store, frame, report


@pytest.mark.slow
@pytest.mark.parametrize("period", [1.0, 0.1], ids=["1s-steps", "0.1s-steps"])
@pytest.mark.parametrize("size", [(1400, 720), (1024, 560)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_an_hour_of_steps_stays_legible_and_shows_the_newest_step(
    themed_app, qtbot, artifacts_dir, period, size
):
    store, frame, report = _an_hour_of(period)
    panel = AgentPanel(store, window=float(HOUR))
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    panel.update_from(frame)
    qtbot.wait(20)
    panel.update_from(frame)  # the plot has its width now
    dev = panel.views[report.identity].devices[report.devices[0].device]
    px = int(dev.plot.getPlotItem().vb.width())
    assert px > 200

    # markers: one per few pixels at most, as lines; no tick per step, no per-sample peak
    drawn = 0
    assert not len(dev.phase_marks[Phase.EVAL].getData()[0] or ())  # no evaluation in this run
    for phase in TRAINING_PHASES:
        mark = dev.phase_marks[phase]
        t, _v = mark.getData()
        assert mark.opts["symbol"] is None, phase
        assert 0 < len(t) <= px // MARK_PX, (phase, len(t), px)
        assert t[0] - T0 < 120  # the whole hour, the older (coarser) history included
        drawn += len(t)
    drawn += len(dev.steps.data)
    assert drawn <= px
    assert not dev.peak.isVisible()
    assert ENVELOPE_NOTE in dev.bucket_legend.text()

    # the bars and the words: the newest step's breakdown at its real peak (in backward,
    # where gradients are made while activations are held), not the end of forward
    def last(metric, device=report.devices[0].device):
        _t, v = store.series(agent_key(report, device, metric), T0)
        return float(v[np.isfinite(v)][-1])

    forward = last(phase_metric(Phase.FORWARD))
    peak = last(phase_peak_metric(Phase.BACKWARD))
    assert peak > forward
    assert f"step {report.step}" in panel.views[report.identity].header.text()
    assert last("step", device="steps") == report.step
    title, buckets = dev.bars.columns[0]
    assert title == peak_title(Phase.BACKWARD, exact=True) == "peak (bwd)"
    fixed = buckets["weights"] + buckets["gradients"] + buckets["optimizer_state"]
    assert buckets["other_allocated"] == pytest.approx(peak - fixed)
    words = dev.phase_label.text()
    assert f"end of forward (activations held) {fmt_bytes(forward)}" in words
    assert f"Step peak in backward: {fmt_bytes(peak)}" in words
    assert "peak" not in words.split("Step peak")[0]  # no end-of-phase figure is called a peak
    assert "Phases read on 100% of steps" in words

    # the areas: activations near their peak in every column once stepping (no comb of
    # spikes, no flat line where sampling and steps lock), and the newest column at it
    t, tops = dev.area
    acts = (tops[ACTIVATIONS] - tops[ACTIVATIONS - 1])[t > T0 + 60]
    assert len(t) <= px // MARK_PX + 1
    assert np.all(acts >= 0.9 * buckets["other_allocated"]), acts.min() / buckets["other_allocated"]
    assert tops[ACTIVATIONS, -1] >= peak
    assert tops[-1, -1] == pytest.approx(last("reserved") + last("outside_pytorch"), rel=0.01)
    panel.grab().save(str(artifacts_dir / f"agent-hour-{period:g}s-steps-{size[0]}x{size[1]}.png"))
