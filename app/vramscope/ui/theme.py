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
moment it is read (a module ``__getattr__``), ``theme.styled(widget, build)``
builds a style sheet from the scheme now and again after a switch, and views
that draw with scheme colours (plots, the agent panel) have an
``apply_theme(scheme)`` method. ``theme.switch(app, mode)`` (the settings
dialog, or the desktop changing with mode "system") applies the new scheme
and re-colours every open window live; a style sheet formatted elsewhere is
mapped role by role (``recolour``).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette

log = logging.getLogger(__name__)

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {
    "orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73",
    "yellow": "#F0E442", "reddish purple": "#CC79A7", "vermillion": "#D55E00",
    "blue": "#0072B2", "black": "#000000",
}
_DARK_PROCESS = ("orange", "sky blue", "bluish green", "reddish purple", "vermillion", "blue")
# On white the strongest first: most workstations show one to four processes.
_LIGHT_PROCESS = ("blue", "vermillion", "bluish green", "reddish purple", "sky blue", "orange")

MODES = ("system", "light", "dark")
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
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "name" and isinstance(getattr(self, f.name), str)}


DARK = Scheme(
    name="dark",
    PLOT_BACKGROUND="#15181d", PLOT_FOREGROUND="#b8bec8", TOTAL_USED="#f2f2f2",
    CAPACITY="#ff6b6b", WARNING="#f0a030", ERROR="#ff5c5c", OK="#3fb68b", MUTED="#8b93a1",
    CARD_BACKGROUND="#20242b", CARD_BORDER="#323844", DEMO_BANNER="#6b4e00",
    WINDOW="#1b1e23", BASE="#15181d", ALT_BASE="#1d2127", TEXT="#e3e6eb", HIGHLIGHT="#2f6fb3",
    BUTTON="#262a31", LINK="#6cb4ff", MID="#2a2f37", DARK="#101215", LIGHT="#3a404b",
    MIDLIGHT="#30353e", SHADOW="#08090b", TRACK="#2c313a",
    PROCESS_COLOURS=tuple(OKABE_ITO[n] for n in _DARK_PROCESS),
    BUCKET_COLOURS=("#88CCEE", "#44AA99", "#DDCC77", "#CC6677", "#6F7785", "#AA4499"),
)

# Text colours reach at least 4.5:1 on their backgrounds (WCAG AA) -- the
# light scheme's warning/error/ok are darker than the dark scheme's for that.
LIGHT = Scheme(
    name="light",
    PLOT_BACKGROUND="#ffffff", PLOT_FOREGROUND="#3d4451", TOTAL_USED="#1f2329",
    CAPACITY="#d62828", WARNING="#9a5b00", ERROR="#c01f1f", OK="#12734f", MUTED="#5c6370",
    CARD_BACKGROUND="#f5f6f8", CARD_BORDER="#cfd4db", DEMO_BANNER="#6b4e00",
    WINDOW="#eceef1", BASE="#ffffff", ALT_BASE="#f4f5f7", TEXT="#1c1f24", HIGHLIGHT="#2f6fb3",
    BUTTON="#e3e6ea", LINK="#0b5cad", MID="#b9bec6", DARK="#8e949d", LIGHT="#fbfbfc",
    MIDLIGHT="#f6f7f9", SHADOW="#5a5f66", TRACK="#dde1e6",
    PROCESS_COLOURS=tuple(OKABE_ITO[n] for n in _LIGHT_PROCESS),
    BUCKET_COLOURS=("#332288", "#117733", "#999933", "#CC6677", "#A0A6B0", "#882255"),
)

SCHEMES = {"dark": DARK, "light": LIGHT}
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
DASHES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine,
          Qt.PenStyle.DashDotLine)
# The same in a stacked area: solid, then hatched fills.
FILLS = (Qt.BrushStyle.SolidPattern, Qt.BrushStyle.BDiagPattern, Qt.BrushStyle.FDiagPattern,
         Qt.BrushStyle.DiagCrossPattern)


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
    """"light" or "dark" as the desktop says, None when it does not say (or Qt < 6.5)."""
    from PySide6.QtGui import QGuiApplication

    app = app or QGuiApplication.instance()
    hints = app.styleHints() if app is not None else None
    get = getattr(hints, "colorScheme", None)
    if get is None:
        return None
    value = get()
    if value == Qt.ColorScheme.Dark:
        return "dark"
    if value == Qt.ColorScheme.Light:
        return "light"
    return None


def resolve(mode: str, app=None) -> Scheme:
    """The scheme for a mode: "system" follows the desktop (dark when unknown)."""
    if mode not in MODES:
        raise ValueError(f"unknown theme {mode!r}; choose from {', '.join(MODES)}")
    if mode == "system":
        return SCHEMES[system_scheme(app) or "dark"]
    return SCHEMES[mode]


# -- applying ------------------------------------------------------------------------
def palette(scheme: Scheme | None = None) -> QPalette:
    s = scheme or _current
    p = QPalette()
    roles = QPalette.ColorRole
    for role, colour in (
        (roles.Window, s.WINDOW), (roles.WindowText, s.TEXT), (roles.Base, s.BASE),
        (roles.AlternateBase, s.ALT_BASE), (roles.ToolTipBase, s.CARD_BACKGROUND),
        (roles.ToolTipText, s.TEXT), (roles.Text, s.TEXT), (roles.Button, s.BUTTON),
        (roles.ButtonText, s.TEXT), (roles.BrightText, "#ffffff"), (roles.Link, s.LINK),
        (roles.Highlight, s.HIGHLIGHT), (roles.HighlightedText, "#ffffff"),
        (roles.PlaceholderText, s.MUTED), (roles.Mid, s.MID), (roles.Dark, s.DARK),
        (roles.Light, s.LIGHT), (roles.Midlight, s.MIDLIGHT), (roles.Shadow, s.SHADOW),
    ):
        p.setColor(role, QColor(colour))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(disabled, role, QColor(s.MUTED))
    return p


_mode = "dark"
_follow_connected = False


def mode() -> str:
    """The mode last given to ``apply`` ("system", "light" or "dark")."""
    return _mode


def apply(app, mode: str = "dark") -> Scheme:
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
    pg.setConfigOptions(background=scheme.PLOT_BACKGROUND, foreground=scheme.PLOT_FOREGROUND,
                        antialias=ANTIALIAS)
    _follow_desktop(app)
    return scheme


def styled(widget, build) -> None:
    """``widget``'s style sheet from ``build(scheme)``, now and after every switch."""
    widget._theme_style = build
    widget.setStyleSheet(build(_current))


def switch(app, mode: str) -> Scheme:
    """Apply ``mode`` now and re-colour every open window.

    Widgets styled with ``styled`` get their sheet built again; widgets with an
    ``apply_theme(scheme)`` method (plots, the agent panel) re-colour themselves;
    whatever else carries a scheme colour is mapped role by role (``recolour``).
    """
    old = _current
    new = apply(app, mode)
    if new is not old:
        for widget in app.topLevelWidgets():
            recolour(widget, old, new)
    return new


def _follow_desktop(app) -> None:
    global _follow_connected
    hints = app.styleHints()
    if _follow_connected or not hasattr(hints, "colorSchemeChanged"):
        return
    _follow_connected = True

    def changed(_scheme) -> None:
        if _mode == "system":
            switch(app, "system")

    hints.colorSchemeChanged.connect(changed)


# -- re-colouring what is open ------------------------------------------------------
_HEX = re.compile(r"#[0-9a-fA-F]{6}\b")


def colour_map(old: Scheme, new: Scheme) -> dict[str, str]:
    """Lower-case '#rrggbb' of ``old`` -> the same role's colour in ``new``."""
    mapping: dict[str, str] = {}
    for role, colour in old.colours().items():
        mapping.setdefault(colour.lower(), getattr(new, role))
    return mapping  # process and bucket colours: their views re-colour them (apply_theme)


def recolour_style_sheet(text: str, mapping: dict[str, str]) -> str:
    return _HEX.sub(lambda m: mapping.get(m.group(0).lower(), m.group(0)), text)


def recolour(root, old: Scheme, new: Scheme) -> int:
    """Re-colour ``root`` and its children from ``old`` to ``new``; returns how many
    things changed. Style sheets, pyqtgraph views (background, axes, curves,
    lines, legends, labels) -- whatever carries one of ``old``'s colours."""
    from PySide6.QtWidgets import QWidget

    mapping = colour_map(old, new)
    changed = 0
    widgets = [root] + root.findChildren(QWidget)
    for w in widgets:
        build = getattr(w, "_theme_style", None)
        if build is not None:
            w.setStyleSheet("")
            w.setStyleSheet(build(new))
            changed += 1
            continue
        sheet = w.styleSheet()
        if sheet:
            new_sheet = recolour_style_sheet(sheet, mapping)
            # set again even when unchanged: a styled widget keeps the palette it
            # resolved against, so its unstyled parts (text) would keep old colours
            w.setStyleSheet("")
            w.setStyleSheet(new_sheet)
            changed += new_sheet != sheet
    try:
        import pyqtgraph as pg
    except ImportError:  # pragma: no cover - pyqtgraph is a dependency
        return changed
    for w in widgets:
        if isinstance(w, pg.GraphicsView):
            changed += _recolour_view(w, mapping, new, pg)
    for w in widgets:
        hook = getattr(w, "apply_theme", None)
        if hook is not None:
            hook(new)
            changed += 1
    return changed


def _mapped(colour: QColor, mapping: dict[str, str]) -> QColor | None:
    target = mapping.get(colour.name().lower())
    if target is None:
        return None
    q = QColor(target)
    q.setAlpha(colour.alpha())
    return q


def _recolour_pen(pen, mapping):
    if pen is None:
        return None
    colour = _mapped(pen.color(), mapping)
    if colour is None:
        return None
    new = type(pen)(pen)
    new.setColor(colour)
    return new


def _recolour_view(view, mapping, new: Scheme, pg) -> int:
    changed = 0
    bg = view.backgroundBrush().color()
    target = _mapped(bg, mapping)
    if target is not None:
        view.setBackground(target)
        changed += 1
    scene = view.scene()
    if scene is None:
        return changed
    for item in scene.items():
        if isinstance(item, pg.AxisItem):
            pen = _recolour_pen(item.pen(), mapping)
            if pen is not None:
                item.setPen(pen)
                item.setTextPen(_recolour_pen(item.textPen(), mapping) or pen)
                changed += 1
        elif isinstance(item, pg.PlotDataItem):
            pen = _recolour_pen(pg.mkPen(item.opts["pen"]), mapping)
            if pen is not None:
                item.setPen(pen)
                changed += 1
        elif isinstance(item, pg.PlotCurveItem) and not isinstance(item.parentItem(), pg.PlotDataItem):
            pen = _recolour_pen(pg.mkPen(item.opts["pen"]), mapping)
            if pen is not None:
                item.setPen(pen)
                changed += 1
        elif isinstance(item, pg.InfiniteLine):
            pen = _recolour_pen(item.pen, mapping)
            if pen is not None:
                item.setPen(pen)
                changed += 1
        elif isinstance(item, pg.LegendItem):
            colour = item.opts.get("labelTextColor")
            if colour is not None:
                target = _mapped(pg.mkColor(colour), mapping)
                if target is not None:
                    item.setLabelTextColor(target)
                    changed += 1
        elif isinstance(item, pg.LabelItem):
            colour = item.opts.get("color")
            if colour is not None:
                target = _mapped(pg.mkColor(colour), mapping)
                if target is not None:
                    item.setText(item.text, color=target.name())
                    changed += 1
        elif isinstance(item, pg.TextItem):
            target = _mapped(item.color, mapping)
            if target is not None:
                item.setColor(target)
                changed += 1
    return changed


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
