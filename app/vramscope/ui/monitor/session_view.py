"""A recorded session in the window: a scrubber over its whole length.

Moving the scrubber shows that moment in the GPU cards and the process
table (read from the file with ``SessionReader.frame_at``) and puts a cursor
on every timeline; the timelines themselves show the whole session and can
be zoomed and panned with the mouse.
"""

from __future__ import annotations

import html
import pathlib
import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

from vramscope.core.units import fmt_duration
from vramscope.ui.qt import pens, theme
from vramscope.ui.qt.safe_text import tip

STEPS = 2000


class SessionScrubber(QWidget):
    moved = Signal(float)  # epoch seconds

    def __init__(self, path: str, span: tuple[float, float], parent=None, hosts=()):
        super().__init__(parent)
        self.t0, self.t1 = span
        of = f" of {html.escape(', '.join(hosts))}" if hosts else ""  # other machines (--host)
        # the file's name (its folder in the tooltip): a long path must not squeeze the slider
        self.title = QLabel(
            f"Recorded session{of}: <b>{html.escape(pathlib.Path(path).name)}</b>"
            f" · {fmt_duration(self.t1 - self.t0)}"
        )
        self.title.setToolTip(tip(str(path)))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, STEPS)
        self.slider.setValue(STEPS)
        self.slider.setToolTip("Scrub through the session: the cards and the table show that moment")
        self.at = QLabel()
        theme.styled(self.at, lambda s: f"color: {s.MUTED};")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.addWidget(self.title)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.at)
        self.slider.valueChanged.connect(self._on_value)
        self._label(self.t1)

    def time_at(self, value: int) -> float:
        return self.t0 + (self.t1 - self.t0) * value / STEPS

    def set_time(self, t: float) -> None:
        span = max(1e-9, self.t1 - self.t0)
        self.slider.setValue(round((t - self.t0) / span * STEPS))

    def _on_value(self, value: int) -> None:
        t = self.time_at(value)
        self._label(t)
        self.moved.emit(t)

    def _label(self, t: float) -> None:
        self.at.setText(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)))


def attach_session(window, reader, path: str) -> SessionScrubber:
    """Show ``reader`` (already loaded into the window's store) with a scrubber."""
    import pyqtgraph as pg

    span = reader.span() or (time.time() - 1, time.time())
    hosts = tuple(dict.fromkeys(g.host for g in reader.gpus() if g.host is not None))
    scrubber = SessionScrubber(path, span, hosts=hosts)
    window.centralWidget().layout().addWidget(scrubber)
    window.set_window("all")
    cursors: dict = {}  # GpuTimeline -> its line at the moment shown
    moment: list[float] = []

    def place_cursors() -> None:
        for timeline in window.gpu_panel.timelines.values():
            line = cursors.get(timeline)
            if line is None:
                line = cursors[timeline] = pg.InfiniteLine(
                    angle=90, movable=False, pen=pens.pen(theme.HIGHLIGHT, 2.0)
                )
                timeline.plot.addItem(line, ignoreBounds=True)
                timeline.plot.setMouseEnabled(x=True, y=False)
            line.setValue(moment[0])

    def show_moment(t: float) -> None:
        frame = reader.frame_at(t)
        if frame is not None:
            window.show_moment(frame)
        moment[:] = [t]
        place_cursors()

    # a big box's rows are made as they scroll into view: they get the cursor then
    window.gpu_panel.row_built.connect(lambda _row: moment and place_cursors())
    scrubber.moved.connect(show_moment)
    theme.follow(scrubber, lambda s: [line.setPen(pens.pen(s.HIGHLIGHT, 2.0)) for line in cursors.values()])
    if reader.problems:
        window.statusBar().showMessage("Opened what could be read: " + "; ".join(reader.problems), 30000)
    return scrubber
