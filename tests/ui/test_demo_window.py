"""The demo window, fed by the simulated workstation: cards, rows and curves
match the data; the screenshot in test-artifacts/ is the README's picture."""

from __future__ import annotations

import pytest
import time

from vramscope.core.store.store import gpu_key
from vramscope.core.units import GiB
from vramscope.ui.processes.process_model import AGENT_MARK
from vramscope.sources.demo.simulated import SimulatedSource
from vramscope.ui.monitor.cards import used_total_text

from .helpers import drawn_through, save, table_cell, table_column

MINUTES = 10


@pytest.mark.slow
def test_demo_window_shows_the_simulated_workstation(make_window, artifacts_dir):
    src = SimulatedSource(seed=1)
    now = time.time()
    frames = [src.sample(now - MINUTES * 60 + k) for k in range(MINUTES * 60)]
    w = make_window(frames, window="10m", source=SimulatedSource(seed=1))
    w.gpu_panel.set_plot_style("lines")  # this test reads the per-process lines
    latest = frames[-1]

    assert w.banner.isVisible() and "Simulated data — demo mode" in w.banner.text()
    assert "demo" in w.windowTitle()
    cards = w.gpu_panel.cards
    assert [cards[g.index].name_text for g in latest.gpus] == [g.name for g in latest.gpus]
    assert [cards[g.index].used.text() for g in latest.gpus] == [used_total_text(g) for g in latest.gpus]

    procs = [p for _g, p in latest.all_processes()]
    assert sorted(int(p) for p in table_column(w, "PID")) == sorted(p.pid for p in procs)
    for p in procs:
        shown = table_cell(w, p.pid, "Memory")
        assert shown == ("n/a" if p.used is None else f"{p.used / GiB:.2f} GiB")
        assert (table_cell(w, p.pid, "Agent") == AGENT_MARK) == p.has_agent
    assert any(p.used is None for p in procs), "the demo should include an n/a process"
    shown = [None if m == "n/a" else float(m.split()[0]) for m in table_column(w, "Memory")]
    figures = [m for m in shown if m is not None]
    assert shown == sorted(figures, reverse=True) + [None] * (len(shown) - len(figures))

    since = latest.time - MINUTES * 60
    for index, tl in w.gpu_panel.timelines.items():
        t, v = w.store.series(gpu_key(index, "used"), since)
        x, y = tl.used_curve.getData()
        assert drawn_through(x, y * GiB, t, v)
        for key, curve in tl.lines.curves.items():
            t, v = w.store.series(key, since)
            x, y = curve.getData()
            assert drawn_through(x, y * GiB, t, v)
        assert tl.lines.curves, "every demo GPU has processes with memory figures"
    save(w, artifacts_dir, "main-window-demo.png")
