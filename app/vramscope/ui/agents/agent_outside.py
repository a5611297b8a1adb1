"""Outside PyTorch on an agent device's timeline: a marker at each jump of the
CUDA context and the libraries' memory, labelled with the event that came with
it (core/agent_figures/outside_story.py)."""

from __future__ import annotations

import pyqtgraph as pg

from vramscope.core.agent_figures.outside_story import OutsideStory
from vramscope.core.units import fmt_bytes


class OutsideMarks:
    def __init__(self, plot_item):
        self._plot = plot_item
        self._lines: dict[float, pg.InfiniteLine] = {}

    def show(self, story: OutsideStory, scheme) -> None:
        wanted = {j.t: j for j in story.jumps}
        for t in [t for t in self._lines if t not in wanted]:
            self._plot.removeItem(self._lines.pop(t))
        for t, j in wanted.items():
            if t in self._lines:
                continue
            label = f"+{fmt_bytes(j.size)} {j.cause.split(' (')[0] if j.cause else 'outside PyTorch'}"
            line = pg.InfiniteLine(
                pos=t,
                angle=90,
                label=label,
                pen=pg.mkPen(scheme.MUTED, width=1, style=pg.QtCore.Qt.PenStyle.DashLine),
                labelOpts={"color": scheme.MUTED, "position": 0.8, "rotateAxis": (1, 0)},
            )
            self._plot.addItem(line)
            self._lines[t] = line
