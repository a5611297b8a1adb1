"""The legend column beside a GPU's timeline (ui/timeline/gpu_timeline.py): its rows, in the
order given, each a sample of the process's line or band and its name and
memory now; under them a note on who is left out (too many to list, or memory
n/a and so not plotted). Rows are kept and re-pointed rather than re-created
while their number holds, as pyqtgraph's LegendItem rebuilds its layout on
every add or remove.
"""

from __future__ import annotations

import math

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsGridLayout, QGraphicsItem, QSizePolicy

from vramscope.core.store.store import proc_identity
from vramscope.ui.qt import theme
from vramscope.ui.monitor.legend_text import LEGEND_TEXT_SIZE, LEGEND_WIDTH, legend_text
from vramscope.ui.qt.safe_text import html_text

LEGEND_PROCESSES = 8  # lines style: the largest N by current memory (+ alerted); the table lists all
LEGEND_ROW = 15  # px per legend row (8.5 pt labels, rows overlap by verSpacing)
LEGEND_MARGIN = 26  # px the legend box adds around its rows
TOTAL, CAPACITY = ("total",), ("capacity",)  # the legend's first two rows


def rows_that_fit(height: int) -> int:
    """How many legend rows fit beside a plot ``height`` px tall."""
    return max(4, int((height - LEGEND_MARGIN) / LEGEND_ROW))


def lines_shown(alive: dict, ended: dict, must: set, fit: int) -> list[tuple]:
    """Lines style: the largest by memory now (+ alerted), ended ones in spare room."""
    n = min(LEGEND_PROCESSES, fit)
    order = sorted(alive, key=lambda k: -alive[k])
    musts = [k for k in order if k in must]
    fill = [k for k in order if k not in must][: max(0, n - len(musts))]
    shown = [k for k in order if k in musts or k in fill]
    room = n - len(shown)
    if room > 0:
        shown += sorted(ended, key=lambda k: -ended[k])[:room]
    return shown


def process_label(key: tuple, labels: dict) -> str:
    """A process's name for the legend, which pyqtgraph renders as HTML: escaped."""
    return html_text(labels.get(proc_identity(key)) or f"pid {key[2]}")


class TimelineLegend:
    """The legend's pyqtgraph item (``item``, placed by the timeline) and what it shows."""

    def __init__(self) -> None:
        s = theme.current()
        self.item = pg.LegendItem(verSpacing=-6, labelTextColor=s.TEXT, labelTextSize=f"{LEGEND_TEXT_SIZE}pt")
        self.item.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Maximum)
        self.item.setMinimumWidth(LEGEND_WIDTH)
        self.item.setMaximumWidth(LEGEND_WIDTH)
        # painted from a cached pixmap: pyqtgraph replays its text on every paint otherwise
        self.item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.more = pg.LabelItem("", color=s.MUTED, size="8pt", justify="left")
        self.rows: list[tuple] = []  # (key, name) shown, in order
        self._blank = pg.PlotDataItem(pen=None)  # the sample of a row drawn without a line
        self._note = ""

    def restyle(self, s: theme.Scheme) -> None:
        theme.colour_legend(self.item, s.TEXT)
        self.more.setText(self.more.text, color=s.MUTED)

    def show(self, entries, hidden: int, not_plotted: list, labels: dict, sources=None) -> None:
        """entries: (key, sample item, name, bytes now or None, ended); ``sources``: per
        entry, the process keys whose latest bytes its figure adds up (``refresh_figures``)."""
        self._shown = (list(entries), hidden, not_plotted, labels, sources)
        rows = [(k, name + (" · ended" if ended else "")) for k, _s, name, _v, ended in entries]
        texts = [legend_text(name, v, ended) for _k, _s, name, v, ended in entries]
        notes = []
        if hidden > 0:
            notes.append(f"+ {hidden} more (see the table)")
        if not_plotted:
            names = ", ".join(process_label(k, labels) for k in not_plotted[:3])
            more = f" +{len(not_plotted) - 3}" if len(not_plotted) > 3 else ""
            notes.append(f"memory n/a, not plotted:<br>{names}{more}")
        note = "<br>".join(notes)
        if len(rows) != len(self.rows):
            self.clear()
            for (k, sample, *_rest), text in zip(entries, texts):
                self.item.addItem(sample if sample is not None else self._blank, text)
            self.item.updateSize()
        else:  # as many rows as shown: each row takes its new process in place
            for (shown, label), (_k, sample, *_rest), text in zip(self.item.items, entries, texts):
                sample = sample if sample is not None else self._blank
                if shown.item is not sample:
                    shown.item = sample
                    shown.update()
                if label.text != text:
                    label.setText(text)
        self.rows = rows
        if note != self._note:
            if self._note:
                self.item.layout.removeItem(self.more)
            if note:
                self.more.setText(note, color=theme.current().MUTED)
                self.item.layout.addItem(self.more, self.item.layout.rowCount(), 0, 1, 2)
            self._note = note
            self.item.updateSize()

    def refresh_figures(self, points: dict) -> None:
        """The figures again from ``points`` (process key -> (time, bytes): the store's
        latest), the curves left as drawn: between two redraws of a slow time axis the
        legend says what the table says at the same instant."""
        shown = getattr(self, "_shown", None)
        if shown is None or shown[4] is None:
            return
        entries, hidden, not_plotted, labels, sources = shown
        fresh = []
        for (k, sample, name, value, ended), keys in zip(entries, sources):
            got = [points[p][1] for p in keys if p in points and math.isfinite(points[p][1])]
            fresh.append((k, sample, name, sum(got) if got else value, ended))
        self.show(fresh, hidden, not_plotted, labels, sources)

    def clear(self) -> None:
        self.item.clear()
        if self._note:
            self.item.layout.removeItem(self.more)
        # a fresh grid: pyqtgraph appends after the old (now empty) rows, which keep height
        old = self.item.layout
        grid = QGraphicsGridLayout()
        grid.setVerticalSpacing(old.verticalSpacing())
        grid.setHorizontalSpacing(old.horizontalSpacing())
        grid.setContentsMargins(*old.getContentsMargins())
        self.item.layout = grid
        self.item.setLayout(grid)
        self.rows = []
        self._note = ""

    def forget(self, key: tuple) -> None:
        """``key``'s sample is going away: no row may keep showing it."""
        if any(k == key for k, _ in self.rows):
            self.clear()

    def key_at(self, scene_pos, wanted: Callable[[tuple], bool]) -> tuple | None:
        """The first row's key that is ``wanted`` and whose name is at ``scene_pos``
        (rows overlap a little); None: no such row there."""
        for (key, _name), (_sample, label) in zip(self.rows, self.item.items):
            if wanted(key) and label.sceneBoundingRect().contains(scene_pos):
                return key
        return None

    def names(self) -> list[str]:
        """The names the legend shows, in order (memory figures left out)."""
        return [name for k, name in self.rows if k not in (TOTAL, CAPACITY)]
