"""Which colour scheme is active -- chosen by the user or following the desktop --
and switching it live.

The schemes themselves are data in ui/qt/schemes.py; the style each process is
drawn in (colour x dash) and the pens and brushes are ui/qt/pens.py's.

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

import logging

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QColor, QPalette

from vramscope.core.settings.view_options import Theme
from vramscope.ui.qt.schemes import DARK, ROLES, SCHEMES, Scheme

log = logging.getLogger(__name__)

MODES = tuple(Theme)
GRID_ALPHA = 0.18
ANTIALIAS = True  # smoother curves; bench/gui_cost.py --no-antialias shows what it costs

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
