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

Integration (the app):

    theme.apply(app, mode)          # mode: "system", "light" or "dark"

**before** importing the window and its panels: several of them format their
style sheets from this module's constants when they are imported (cards.py,
planner_tab.py, alerts_panel.py), so the scheme active at that moment is the
one they keep. With ``mode="system"`` the scheme follows the desktop's
light/dark setting (``QStyleHints.colorScheme()``, Qt >= 6.5; "unknown" means
dark) and, when the desktop switches, every open window is re-coloured.

Switching later (the settings dialog): ``theme.switch(app, mode)`` applies the
new scheme and re-colours what is open -- plot backgrounds, axes, curves,
legends and every style sheet that uses a scheme colour. Widgets created
afterwards by modules that cached a colour at import keep the start-up scheme
until the next start; a restart gives the whole app the new scheme.
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

    def colours(self) -> dict[str, str]:
        """Role -> colour, for every single-colour role."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in ("name", "PROCESS_COLOURS")}


DARK = Scheme(
    name="dark",
    PLOT_BACKGROUND="#15181d", PLOT_FOREGROUND="#b8bec8", TOTAL_USED="#f2f2f2",
    CAPACITY="#ff6b6b", WARNING="#f0a030", ERROR="#ff5c5c", OK="#3fb68b", MUTED="#8b93a1",
    CARD_BACKGROUND="#20242b", CARD_BORDER="#323844", DEMO_BANNER="#6b4e00",
    WINDOW="#1b1e23", BASE="#15181d", ALT_BASE="#1d2127", TEXT="#e3e6eb", HIGHLIGHT="#2f6fb3",
    BUTTON="#262a31", LINK="#6cb4ff", MID="#2a2f37", DARK="#101215", LIGHT="#3a404b",
    MIDLIGHT="#30353e", SHADOW="#08090b", TRACK="#2c313a",
    PROCESS_COLOURS=tuple(OKABE_ITO[n] for n in _DARK_PROCESS),
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
)

SCHEMES = {"dark": DARK, "light": LIGHT}

# The module constants other modules read (theme.MUTED, ...): the active scheme's.
PLOT_BACKGROUND = PLOT_FOREGROUND = TOTAL_USED = CAPACITY = WARNING = ERROR = OK = MUTED = ""
CARD_BACKGROUND = CARD_BORDER = DEMO_BANNER = WINDOW = BASE = ALT_BASE = TEXT = HIGHLIGHT = ""
BUTTON = LINK = MID = MIDLIGHT = SHADOW = TRACK = ""  # (the Dark/Light roles stay in the schemes)
PROCESS_COLOURS: tuple[str, ...] = ()
_current: Scheme = DARK


def _install(scheme: Scheme) -> None:
    global _current, PROCESS_COLOURS
    _current = scheme
    g = globals()
    for role, colour in scheme.colours().items():
        if role not in ("DARK", "LIGHT"):  # not to shadow the two schemes
            g[role] = colour
    PROCESS_COLOURS = scheme.PROCESS_COLOURS


_install(DARK)


def current() -> Scheme:
    return _current


class ColourBook:
    """A stable (colour, dashed) per process identity.

    Without explicit ``colours`` the active scheme's palette is used at each
    call, so after a theme switch the next redraw uses the new palette while
    every process keeps its place in it.
    """

    def __init__(self, colours: tuple[str, ...] | None = None):
        self._colours = colours
        self._assigned: dict = {}

    def style(self, identity) -> tuple[str, bool]:
        n = self._assigned.get(identity)
        if n is None:
            n = self._assigned[identity] = len(self._assigned)
        colours = self._colours or _current.PROCESS_COLOURS
        colour = colours[n % len(colours)]
        dashed = (n // len(colours)) % 2 == 1
        return colour, dashed

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


def switch(app, mode: str) -> Scheme:
    """Apply ``mode`` now and re-colour every open top-level window."""
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
    for i, colour in enumerate(old.PROCESS_COLOURS):
        mapping.setdefault(colour.lower(), new.PROCESS_COLOURS[i % len(new.PROCESS_COLOURS)])
    return mapping


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


def pen(colour: str, width: float = 1.5, dashed: bool = False, alpha: int = 255):
    import pyqtgraph as pg

    q = QColor(colour)
    q.setAlpha(alpha)
    p = pg.mkPen(q, width=width)
    if dashed:
        p.setStyle(Qt.PenStyle.DashLine)
    p.setCosmetic(True)
    return p
