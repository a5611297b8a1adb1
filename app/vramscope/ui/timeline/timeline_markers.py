"""Alert markers on a GPU's timeline: a dashed vertical line per alert (and OOM)
with its label, kept muted as "(cleared)" in the history once the alert clears.

Labels sit right of their line (left near the plot's right edge, never
clipped); labels at about one moment stack one row under the other instead of
overwriting each other; a line outside the time window shows no label (it
would be cut at the plot's edge).
"""

from __future__ import annotations

import pyqtgraph as pg

from vramscope.ui.qt import pens, theme

MARKERS_KEPT = 40  # cleared alerts stay marked in the history, up to this many per GPU
MARKER_ROW = 16  # px at least between alert markers' labels stacked at one moment


class AlertMarkers:
    """The markers of one plot, by alert key."""

    def __init__(self, plot):
        self.plot = plot
        self.lines: dict[tuple, pg.InfiniteLine] = {}
        self.info: dict[tuple, tuple] = {}  # key -> (time, colour role, label, active)

    def set(self, markers: dict[tuple, tuple[float, str, str]]) -> bool:
        """Vertical markers: key -> (time, colour role, label); alerts and OOMs on this GPU.
        The role names a theme colour ("ERROR", "WARNING"), so a theme switch re-colours it.
        A marker whose alert has cleared stays in the history, muted and labelled
        "(cleared)", so the moment is still there when scrolling back. Returns
        whether anything changed."""
        changed = False
        for key, (t, colour, label, active) in list(self.info.items()):
            if key not in markers and active:
                self.info[key] = (t, "MUTED", label + " (cleared)", False)
                self._style(key)
                changed = True
        for key, (t, colour, label) in markers.items():
            info = (t, colour, label, True)
            if self.info.get(key) != info:
                self.info[key] = info
                self._style(key)
                changed = True
        while len(self.info) > MARKERS_KEPT:
            oldest = min(
                (k for k, v in self.info.items() if not v[3]), key=lambda k: self.info[k][0], default=None
            )
            if oldest is None:
                break
            self.info.pop(oldest)
            self.plot.removeItem(self.lines.pop(oldest))
        return changed

    def restyle(self) -> None:
        for key in self.info:
            self._style(key)

    def _style(self, key) -> None:
        t, role, label, _active = self.info[key]
        s = theme.current()
        colour = getattr(s, role)
        line = self.lines.get(key)
        if line is None:
            line = pg.InfiniteLine(
                angle=90,
                movable=False,
                label=label,
                labelOpts={"position": 0.99, "anchors": [(0, 0), (0, 0)]},
            )
            self.lines[key] = line
            self.plot.addItem(line, ignoreBounds=True)
        line.label.fill = pg.mkBrush(s.PLOT_BACKGROUND + "c8")
        line.setPen(pens.pen(colour, 1.2, dashed=True))
        line.label.setFormat(label)
        line.label.setColor(colour)
        line.setValue(t)

    def place_labels(self, x_range: tuple[float, float] | None) -> None:
        """Labels to the right of their line, or to the left near the right edge (never
        clipped); one at about the moment of another goes a row lower."""
        if not self.lines or x_range is None:
            return
        t0, t1 = x_range
        vb = self.plot.vb
        width, height = max(1.0, vb.width()), max(1.0, vb.height())
        per_s = width / max(t1 - t0, 1e-9)
        placed: list[list[tuple[float, float]]] = []  # per level: the x spans taken (px)
        # active alerts first, then by time: an active one gets the top row
        for key in sorted(self.lines, key=lambda k: (not self.info[k][3], self.info[k][0])):
            line = self.lines[key]
            inside = t0 <= line.value() <= t1
            line.label.setVisible(inside)  # a line left of the window: no label cut at its edge
            if not inside:
                continue
            right = (line.value() - t0) > 0.7 * (t1 - t0)
            anchor = (1, 0) if right else (0, 0)
            x = (line.value() - t0) * per_s
            w = line.label.boundingRect().width() + 4
            span = (x - w, x) if right else (x, x + w)
            level = next(
                (i for i, taken in enumerate(placed) if all(span[1] <= a or span[0] >= b for a, b in taken)),
                len(placed),
            )
            if level == len(placed):
                placed.append([])
            placed[level].append(span)
            row = max(MARKER_ROW, line.label.boundingRect().height() + 1)
            position = max(0.05, 0.99 - level * (row / height))
            if line.label.anchors[0] != anchor or line.label.orthoPos != position:
                line.label.anchors = [anchor, anchor]
                line.label.setPosition(position)

    def times(self) -> list[float]:
        """Times of the active alerts' markers."""
        return sorted(v[0] for v in self.info.values() if v[3])
