"""Colours: a dark Fusion palette and a colour-blind-safe set for processes.

Process colours come from Okabe & Ito's palette (black dropped: it vanishes
on a dark plot), assigned in order of first sight and kept per process
identity for the whole session, so a process keeps its colour in every plot,
in the legend and in the table. Past seven processes the colours repeat with
a dashed line, so two curves never look the same.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette

# Okabe & Ito (2008), "Color Universal Design", without black.
PROCESS_COLOURS = (
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#009E73",  # bluish green
    "#F0E442",  # yellow
    "#CC79A7",  # reddish purple
    "#D55E00",  # vermillion
    "#0072B2",  # blue
)

PLOT_BACKGROUND = "#15181d"
PLOT_FOREGROUND = "#b8bec8"
GRID_ALPHA = 0.18
TOTAL_USED = "#f2f2f2"
CAPACITY = "#ff6b6b"
WARNING = "#f0a030"
ERROR = "#ff5c5c"
OK = "#3fb68b"
MUTED = "#8b93a1"
CARD_BACKGROUND = "#20242b"
CARD_BORDER = "#323844"
DEMO_BANNER = "#6b4e00"
ANTIALIAS = True  # smoother curves; bench/gui_cost.py --no-antialias shows what it costs

WINDOW = "#1b1e23"
BASE = "#15181d"
ALT_BASE = "#1d2127"
TEXT = "#e3e6eb"
HIGHLIGHT = "#2f6fb3"


class ColourBook:
    """A stable (colour, dashed) per process identity."""

    def __init__(self, colours: tuple[str, ...] = PROCESS_COLOURS):
        self._colours = colours
        self._assigned: dict = {}

    def style(self, identity) -> tuple[str, bool]:
        n = self._assigned.get(identity)
        if n is None:
            n = self._assigned[identity] = len(self._assigned)
        colour = self._colours[n % len(self._colours)]
        dashed = (n // len(self._colours)) % 2 == 1
        return colour, dashed

    def colour(self, identity) -> str:
        return self.style(identity)[0]


def dark_palette() -> QPalette:
    p = QPalette()
    c = QColor
    roles = QPalette.ColorRole
    for role, colour in (
        (roles.Window, WINDOW), (roles.WindowText, TEXT), (roles.Base, BASE),
        (roles.AlternateBase, ALT_BASE), (roles.ToolTipBase, CARD_BACKGROUND),
        (roles.ToolTipText, TEXT), (roles.Text, TEXT), (roles.Button, "#262a31"),
        (roles.ButtonText, TEXT), (roles.BrightText, "#ffffff"), (roles.Link, "#6cb4ff"),
        (roles.Highlight, HIGHLIGHT), (roles.HighlightedText, "#ffffff"),
        (roles.PlaceholderText, MUTED), (roles.Mid, "#2a2f37"), (roles.Dark, "#101215"),
        (roles.Light, "#3a404b"), (roles.Midlight, "#30353e"), (roles.Shadow, "#08090b"),
    ):
        p.setColor(role, c(colour))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(disabled, role, c(MUTED))
    return p


def apply(app) -> None:
    """Fusion style, dark palette, pyqtgraph colours to match."""
    import pyqtgraph as pg

    app.setStyle("Fusion")
    app.setPalette(dark_palette())
    pg.setConfigOptions(background=PLOT_BACKGROUND, foreground=PLOT_FOREGROUND,
                      antialias=ANTIALIAS)


def pen(colour: str, width: float = 1.5, dashed: bool = False, alpha: int = 255):
    import pyqtgraph as pg

    q = QColor(colour)
    q.setAlpha(alpha)
    p = pg.mkPen(q, width=width)
    if dashed:
        p.setStyle(Qt.PenStyle.DashLine)
    p.setCosmetic(True)
    return p
