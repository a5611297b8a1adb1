"""One frame out to the monitor's views: the GPU cards at once, the process
table at most twice a second, the plots at most once per PLOT_STEP_PX pixels
of their time axis, the legends' figures between two plot redraws -- and the
processes' styles (ui/qt/pens.py ColourBook) kept in order of first sight.

Fast sampling (10 Hz) redraws no finer than the eye can use. No Qt here: the
views are whatever has the GpuPanel's and ProcessTable's methods; the window
(ui/window/main_window.py) decides when a frame is shown (not paused, a GPU
to show) and calls ``show``.
"""

from __future__ import annotations

import itertools

from vramscope.core.processes.process_columns import identities
from vramscope.core.samples import Frame
from vramscope.core.stream.first_look import is_pending

TABLE_MIN_INTERVAL = 0.5  # seconds of data between two table updates
LIVE_STYLES_EVERY = 10.0  # seconds between passes that free ended processes' styles
TABLE_ROWS_PER_SECOND = 4000  # a bigger table is rebuilt less often (16,384 processes: every 4 s)
PLOT_MAX_INTERVAL = 3.0  # the longest a plot waits for a redraw, whatever the window
PLOT_STEP_PX = 5  # the plots move at most this many pixels per redraw (CPU: bench/gui_vs_nvitop.py)


def plot_interval(start: float, t: float, px: float) -> float:
    """Seconds of data per PLOT_STEP_PX pixels of a ``px`` wide time axis from
    ``start`` to ``t`` (at most PLOT_MAX_INTERVAL; 0 while the plot has no width)."""
    if px < 50:
        return 0.0
    return min(PLOT_MAX_INTERVAL, PLOT_STEP_PX * (t - start) / px)


class FrameFanOut:
    """``feed``: the pipeline (its store, labels, kin); ``gpu_panel`` and ``table``
    the views; ``colours`` the ColourBook they share."""

    def __init__(self, feed, colours, gpu_panel, table):
        self.feed, self.colours, self.gpu_panel, self.table = feed, colours, gpu_panel, table
        self.table_time = float("-inf")
        self.table_pending = False  # the table shown says the processes are being read
        self.plot_time = float("-inf")
        self._styled = 0  # labels given a colour so far (in order of first sight)
        self._labels_generation = 0  # the feed's labels_generation those were counted in
        self._live_count, self._live_time = -1, float("-inf")

    def show(self, frame: Frame, seconds: float | None, force: bool = False) -> None:
        """``frame`` in the views, over a time window of ``seconds`` (None: the session)."""
        store = self.feed.store
        self.gpu_panel.update_cards(frame)
        t = frame.time
        processes = sum(len(g.processes) for g in frame.gpus)
        if processes != self._live_count or abs(t - self._live_time) >= LIVE_STYLES_EVERY:
            # styles of ended processes are given again: worth a pass over every
            # process when the count changes, else now and then (16k processes: 25 ms)
            self._live_count, self._live_time = processes, t
            self.colours.set_live(i for g in frame.gpus for i in identities(g.processes))
        every = max(TABLE_MIN_INTERVAL, processes / TABLE_ROWS_PER_SECOND)
        pending = is_pending(frame)  # (the processes read at last: shown at once)
        table_shown = (
            force or t - self.table_time >= every or t < self.table_time or pending != self.table_pending
        )
        if table_shown:
            self.table_time, self.table_pending = t, pending
            self.table.show_frame(frame, store)
        since = None if seconds is None else t - seconds
        start = since if since is not None else (store.first_time or t)
        px = max((tl.plot.vb.width() for tl in self.gpu_panel.timelines.values()), default=0)
        if force or t - self.plot_time >= plot_interval(start, t, px) or t < self.plot_time:
            self.plot_time = t
            labels = self._style_labels()
            self.gpu_panel.update_timelines(store, since, t, labels, processes, kin=self.feed.kin())
        elif table_shown:  # the legends say the figures the table says, at the same instant
            self.gpu_panel.refresh_figures(store)
        self.gpu_panel.highlight(self.table.selected_key)

    def _style_labels(self) -> dict:
        """The feed's labels, each process given its style in order of first sight
        (stable from then on); those of forgotten processes dropped."""
        labels = self.feed.labels()
        generation = self.feed.labels_generation
        if generation != self._labels_generation:
            self._labels_generation, self._styled = generation, 0
            self.colours.keep(labels)
        for ident in itertools.islice(labels, self._styled, None):
            self.colours.style(ident)
        self._styled = len(labels)
        return labels
