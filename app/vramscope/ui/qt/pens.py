"""Pens, brushes and the style each process is drawn in (colour x dash).

A process keeps one style -- a colour of the active scheme's palette and a
line style -- in every plot, in the legend and in the table's swatch: the
``ColourBook`` gives it, in order of first sight. Past the palette's colours
the styles repeat with a dashed line (``DASHES``; ``FILLS`` the same in a
stacked area), so two curves never look the same. ``pen`` and ``brush`` make
the Qt objects in such a style.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from vramscope.ui.qt import theme

# Line styles that tell two processes of one colour apart: colour x dash.
DASHES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
# The same in a stacked area: solid, then hatched fills.
FILLS = (
    Qt.BrushStyle.SolidPattern,
    Qt.BrushStyle.BDiagPattern,
    Qt.BrushStyle.FDiagPattern,
    Qt.BrushStyle.DiagCrossPattern,
)


class ColourBook:
    """A stable (colour, dash) per process identity -- colour x dash, so up to
    len(palette) x len(DASHES) processes alive at once all look different.

    A new process takes the first style no *live* process holds
    (``set_live``); a process keeps its style for as long as it is known.
    Without explicit ``colours`` the active scheme's palette is read at each
    call, so after a theme switch the next redraw uses the new palette while
    every process keeps its place in it.
    """

    def __init__(self, colours: tuple[str, ...] | None = None):
        self._colours = colours
        self._assigned: dict = {}
        self._taken: set[int] = set()  # styles held by live (or, before set_live, all) processes
        self._low = 0  # no style below this is free (taken only grows until set_live)

    def set_live(self, identities) -> None:
        """The processes listed now: styles of the others may be given again."""
        assigned = self._assigned
        self._taken = {assigned[i] for i in identities if i in assigned}
        self._low = 0

    def keep(self, identities) -> None:
        """Forget the styles of every process but these (processes gone from the
        history); the styles of those kept do not change."""
        self._assigned = {i: n for i, n in self._assigned.items() if i in identities}
        self._taken &= set(self._assigned.values())
        self._low = 0

    def style(self, identity) -> tuple[str, int]:
        """(colour, dash index into DASHES / FILLS)."""
        n = self._assigned.get(identity)
        if n is None:
            n, taken = self._low, self._taken
            while n in taken:
                n += 1
            self._low = n + 1
            taken.add(n)
            self._assigned[identity] = n
        colours = self._colours or theme.current().PROCESS_COLOURS
        return colours[n % len(colours)], (n // len(colours)) % len(DASHES)

    def colour(self, identity) -> str:
        return self.style(identity)[0]


def pen(colour: str, width: float = 1.5, dashed: bool | int = False, alpha: int = 255):
    """A cosmetic pen; ``dashed``: True for a dashed line, or an index into DASHES."""
    import pyqtgraph as pg

    q = QColor(colour)
    q.setAlpha(alpha)
    p = pg.mkPen(q, width=width)
    dash = int(dashed)
    if dash:
        p.setStyle(DASHES[dash % len(DASHES)])
    p.setCosmetic(True)
    return p


def brush(colour: str, dash: int = 0, alpha: int = 255):
    """A fill in a process's style: solid, or hatched for the dashed ones."""
    from PySide6.QtGui import QBrush

    q = QColor(colour)
    q.setAlpha(alpha)
    return QBrush(q, FILLS[dash % len(FILLS)])
