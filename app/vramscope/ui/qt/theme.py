"""Colours: a dark and a light scheme, chosen by the user or following the desktop,
and a colour-blind-safe set for processes.

Process colours come from Okabe & Ito's palette, assigned in order of first
sight and kept per process identity for the whole session, so a process keeps
its colour in every plot, in the legend and in the table. Black and yellow are
left out of both schemes: black vanishes on the dark plot and is the light
scheme's total-used curve, yellow vanishes on white and is hard to tell from
the dark scheme's white total-used curve. The six left are ordered so the best
contrast comes first. Past six processes the colours repeat with a dashed line,
so two curves never look the same.

Integration (the app): ``theme.apply(app, mode)`` (mode: "system", "light"
or "dark") before the window is built. Colours are read when they are used,
never copied at import: ``theme.MUTED`` is the active scheme's colour at the
moment it is read (a module ``__getattr__``). ``theme.switch(app, mode)``
(the settings dialog, or the desktop changing with mode "system") applies a
new scheme to every open window live: a widget styled with
``theme.styled(widget, build)`` gets its style sheet built again from the new
scheme, and whatever a style sheet cannot say -- plot pens and brushes, item
colours, rich text -- is re-coloured by a hook its view registered with
``theme.follow(owner, hook)``: the ``changed`` signal of ``theme.changes()``
calls it with the new scheme for as long as the owner lives.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QColor, QPalette

from vramscope.core.settings.view_options import Theme

log = logging.getLogger(__name__)

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "reddish purple": "#CC79A7",
    "vermillion": "#D55E00",
    "blue": "#0072B2",
    "black": "#000000",
}
_DARK_PROCESS = ("orange", "sky blue", "bluish green", "reddish purple", "vermillion", "blue")
# On white the strongest first: most workstations show one to four processes.
_LIGHT_PROCESS = ("blue", "vermillion", "bluish green", "reddish purple", "sky blue", "orange")

MODES = tuple(Theme)
GRID_ALPHA = 0.18
ANTIALIAS = True  # smoother curves; bench/gui_cost.py --no-antialias shows what it costs


@dataclass(frozen=True)
class Scheme:
    """Every colour the UI uses, for one scheme. Field names are the module constants'."""

    name: str
    PLOT_BACKGROUND: str
    PLOT_FOREGROUND: str
    TOTAL_USED: str
    CAPACITY: str
    WARNING: str
    ERROR: str
    OK: str
    MUTED: str
    CARD_BACKGROUND: str
    CARD_BORDER: str
    DEMO_BANNER: str
    WINDOW: str
    BASE: str
    ALT_BASE: str
    TEXT: str
    HIGHLIGHT: str
    BUTTON: str
    LINK: str
    MID: str
    DARK: str
    LIGHT: str
    MIDLIGHT: str
    SHADOW: str
    TRACK: str  # the empty part of a progress bar
    PROCESS_COLOURS: tuple[str, ...]
    # the agent panel's buckets, in BUCKET order (weights, gradients, optimizer state,
    # activations + temporaries, cached free, outside PyTorch): Paul Tol's "muted"
    # colour-blind-safe scheme (Tol 2021, SRON/EPS/TN/09-002), so no bucket looks
    # like a process of the Okabe-Ito palette
    BUCKET_COLOURS: tuple[str, ...] = ()

    def colours(self) -> dict[str, str]:
        """Role -> colour, for every single-colour role."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "name" and isinstance(getattr(self, f.name), str)
        }


DARK = Scheme(
    name="dark",
    PLOT_BACKGROUND="#15181d",
    PLOT_FOREGROUND="#b8bec8",
    TOTAL_USED="#f2f2f2",
    CAPACITY="#ff6b6b",
    WARNING="#f0a030",
    ERROR="#ff5c5c",
    OK="#3fb68b",
    MUTED="#8b93a1",
    CARD_BACKGROUND="#20242b",
    CARD_BORDER="#323844",
    DEMO_BANNER="#6b4e00",
    WINDOW="#1b1e23",
    BASE="#15181d",
    ALT_BASE="#1d2127",
    TEXT="#e3e6eb",
    HIGHLIGHT="#2f6fb3",
    BUTTON="#262a31",
    LINK="#6cb4ff",
    MID="#2a2f37",
    DARK="#101215",
    LIGHT="#3a404b",
    MIDLIGHT="#30353e",
    SHADOW="#08090b",
    TRACK="#2c313a",
    PROCESS_COLOURS=tuple(OKABE_ITO[n] for n in _DARK_PROCESS),
    BUCKET_COLOURS=("#88CCEE", "#44AA99", "#DDCC77", "#CC6677", "#6F7785", "#AA4499"),
)

# Text colours reach at least 4.5:1 on their backgrounds (WCAG AA) -- the
# light scheme's warning/error/ok are darker than the dark scheme's for that.
LIGHT = Scheme(
    name="light",
    PLOT_BACKGROUND="#ffffff",
    PLOT_FOREGROUND="#3d4451",
    TOTAL_USED="#1f2329",
    CAPACITY="#d62828",
    WARNING="#9a5b00",
    ERROR="#c01f1f",
    OK="#12734f",
    MUTED="#5c6370",
    CARD_BACKGROUND="#f5f6f8",
    CARD_BORDER="#cfd4db",
    DEMO_BANNER="#6b4e00",
    WINDOW="#eceef1",
    BASE="#ffffff",
    ALT_BASE="#f4f5f7",
    TEXT="#1c1f24",
    HIGHLIGHT="#2f6fb3",
    BUTTON="#e3e6ea",
    LINK="#0b5cad",
    MID="#b9bec6",
    DARK="#8e949d",
    LIGHT="#fbfbfc",
    MIDLIGHT="#f6f7f9",
    SHADOW="#5a5f66",
    TRACK="#dde1e6",
    PROCESS_COLOURS=tuple(OKABE_ITO[n] for n in _LIGHT_PROCESS),
    BUCKET_COLOURS=("#332288", "#117733", "#999933", "#CC6677", "#A0A6B0", "#882255"),
)

SCHEMES = {Theme.DARK: DARK, Theme.LIGHT: LIGHT}
ROLES = frozenset(f.name for f in dataclasses.fields(Scheme)) - {"name"}
_current: Scheme = DARK


def __getattr__(name: str):
    """``theme.MUTED`` and the other roles: the active scheme's, read when asked
    (not copied at import), so whatever formats a colour gets today's scheme."""
    if name in ROLES:
        return getattr(_current, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _install(scheme: Scheme) -> None:
    global _current
    _current = scheme


def current() -> Scheme:
    return _current


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
        colours = self._colours or _current.PROCESS_COLOURS
        return colours[n % len(colours)], (n // len(colours)) % len(DASHES)

    def colour(self, identity) -> str:
        return self.style(identity)[0]


# -- which scheme --------------------------------------------------------------------
def system_scheme(app=None) -> str | None:
    """ "light" or "dark" as the desktop says, None when it does not say (or Qt < 6.5)."""
    from PySide6.QtGui import QGuiApplication

    app = app or QGuiApplication.instance()
    hints = app.styleHints() if app is not None else None
    get = getattr(hints, "colorScheme", None)
    if get is None:
        return None
    value = get()
    if value == Qt.ColorScheme.Dark:
        return Theme.DARK
    if value == Qt.ColorScheme.Light:
        return Theme.LIGHT
    return None


def resolve(mode: str, app=None) -> Scheme:
    """The scheme for a mode: "system" follows the desktop (dark when unknown)."""
    if mode not in MODES:
        raise ValueError(f"unknown theme {mode!r}; choose from {', '.join(MODES)}")
    if mode == Theme.SYSTEM:
        return SCHEMES[system_scheme(app) or Theme.DARK]
    return SCHEMES[mode]


# -- applying ------------------------------------------------------------------------
def palette(scheme: Scheme | None = None) -> QPalette:
    s = scheme or _current
    p = QPalette()
    roles = QPalette.ColorRole
    for role, colour in (
        (roles.Window, s.WINDOW),
        (roles.WindowText, s.TEXT),
        (roles.Base, s.BASE),
        (roles.AlternateBase, s.ALT_BASE),
        (roles.ToolTipBase, s.CARD_BACKGROUND),
        (roles.ToolTipText, s.TEXT),
        (roles.Text, s.TEXT),
        (roles.Button, s.BUTTON),
        (roles.ButtonText, s.TEXT),
        (roles.BrightText, "#ffffff"),
        (roles.Link, s.LINK),
        (roles.Highlight, s.HIGHLIGHT),
        (roles.HighlightedText, "#ffffff"),
        (roles.PlaceholderText, s.MUTED),
        (roles.Mid, s.MID),
        (roles.Dark, s.DARK),
        (roles.Light, s.LIGHT),
        (roles.Midlight, s.MIDLIGHT),
        (roles.Shadow, s.SHADOW),
    ):
        p.setColor(role, QColor(colour))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(disabled, role, QColor(s.MUTED))
    return p


_mode = Theme.DARK
_follow_connected = False


def mode() -> str:
    """The mode last given to ``apply`` ("system", "light" or "dark")."""
    return _mode


def apply(app, mode: str = Theme.DARK) -> Scheme:
    """Fusion style, the scheme's palette, pyqtgraph colours to match.

    Call it before the window's modules are imported (see the module doc).
    Returns the scheme in use. With "system", desktop changes are followed.
    """
    import pyqtgraph as pg

    global _mode
    scheme = resolve(mode, app)
    _mode = mode
    _install(scheme)
    app.setStyle("Fusion")
    app.setPalette(palette(scheme))
    pg.setConfigOptions(
        background=scheme.PLOT_BACKGROUND, foreground=scheme.PLOT_FOREGROUND, antialias=ANTIALIAS
    )
    _follow_desktop(app)
    return scheme


def styled(widget, build) -> None:
    """``widget``'s style sheet from ``build(scheme)``, now and after every switch."""
    widget._theme_style = build
    widget.setStyleSheet(build(_current))


class _Changes(QObject):
    changed = Signal(object)  # the new Scheme, after it is applied


_changes: _Changes | None = None


def changes() -> _Changes:
    """The object whose ``changed(scheme)`` signal follows every live switch."""
    global _changes
    if _changes is None:
        _changes = _Changes()
    return _changes


class _Follower(QObject):
    """Runs ``hook(scheme)`` after each switch for as long as its owner (its Qt parent)
    lives: destroying the owner destroys the follower and its connection."""

    def __init__(self, owner, hook):
        super().__init__(owner)
        self._hook = hook
        changes().changed.connect(self._run)

    @Slot(object)
    def _run(self, scheme) -> None:
        self._hook(scheme)


def follow(owner, hook) -> None:
    """Call ``hook(scheme)`` after every live switch, while the QObject ``owner`` lives.

    For what a style sheet cannot say: plot pens and brushes, item colours,
    rich text with colours in it. Not called now (the view builds in today's scheme).
    """
    _Follower(owner, hook)


def switch(app, mode: str) -> Scheme:
    """Apply ``mode`` now and re-colour every open window.

    Every style sheet is set again -- built anew by ``styled``, or as it is: a
    widget with a style sheet keeps the palette it was polished against, so its
    unstyled parts (text, frames) would keep the old colours -- then views that
    ``follow`` the theme re-colour themselves.
    """
    old = _current
    new = apply(app, mode)
    if new is not old:
        for widget in app.allWidgets():
            build = getattr(widget, "_theme_style", None)
            sheet = build(new) if build is not None else widget.styleSheet()
            if sheet:
                widget.setStyleSheet("")
                widget.setStyleSheet(sheet)
        changes().changed.emit(new)
    return new


def _follow_desktop(app) -> None:
    global _follow_connected
    hints = app.styleHints()
    if _follow_connected or not hasattr(hints, "colorSchemeChanged"):
        return
    _follow_connected = True

    def changed(_scheme) -> None:
        if _mode == Theme.SYSTEM:
            switch(app, Theme.SYSTEM)

    hints.colorSchemeChanged.connect(changed)


# -- pyqtgraph views --------------------------------------------------------------------
def colour_plot(view, s: Scheme | None = None) -> None:
    """A pyqtgraph view's background and axes (lines, ticks, tick labels, axis label)."""
    import pyqtgraph as pg

    s = s or _current
    view.setBackground(s.PLOT_BACKGROUND)
    for item in view.scene().items():
        if isinstance(item, pg.AxisItem):
            item.setPen(s.PLOT_FOREGROUND)
            item.setTextPen(s.PLOT_FOREGROUND)


def colour_legend(legend, colour: str) -> None:
    """A pyqtgraph legend's text, the rows it shows included (pyqtgraph only
    stores a new label colour, for labels added later)."""
    legend.setLabelTextColor(colour)
    for _sample, label in legend.items:
        label.setText(label.text, color=colour)


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


def fixed_plot(p, left_width: int) -> None:
    """A GiB-over-time PlotItem the app ranges itself: no menu, buttons or mouse
    zoom, no auto-range, and ``gib_axis``."""
    p.setMenuEnabled(False)
    p.hideButtons()
    p.setMouseEnabled(x=False, y=False)
    p.disableAutoRange()
    gib_axis(p, left_width)


def gib_axis(p, left_width: int) -> None:
    """A GiB-over-time plot's grid (the scheme's) and its GiB axis, as labelled."""
    p.showGrid(x=True, y=True, alpha=GRID_ALPHA)
    p.setLabel("left", "GiB")
    p.getAxis("left").enableAutoSIPrefix(False)  # (and no relabel per frame)
    p.getAxis("left").setWidth(left_width)
