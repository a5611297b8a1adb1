"""The window's toolbar: the time window, the plot style, pause -- each also
in the View menu -- and, on the right, where the frames come from.

The actions only say what the user chose (``on_window(key)``,
``on_style(style)``, ``on_pause(paused)``); the window does it. While there
is nothing to plot (no GPU) they are greyed (``set_enabled``).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QLabel, QMenu, QSizePolicy, QToolBar, QWidget

from vramscope.core.settings.view_options import DEFAULT_PLOT_STYLE, PlotStyle, TimeWindow
from vramscope.ui.qt import theme

# key -> (button text, seconds; None = the whole session)
TIME_WINDOWS = {w.value: (w.text, w.seconds) for w in TimeWindow}


class ViewControls:
    def __init__(
        self,
        window,
        view_menu: QMenu,
        window_key: str,
        on_window: Callable[[str], None],
        on_style: Callable[[str], None],
        on_pause: Callable[[bool], None],
    ):
        bar = self.toolbar = QToolBar("Time window", window)
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        theme.styled(
            bar,
            lambda s: (
                "QToolBar { spacing: 4px; padding: 4px 8px; border: none; }"
                "QToolButton { padding: 4px 12px; border-radius: 4px; }"
                f"QToolButton:checked {{ background: {s.HIGHLIGHT}; color: white; }}"
                f"QToolButton:disabled {{ background: transparent; color: {s.MUTED}; }}"
            ),
        )
        bar.addWidget(muted_label("Time window "))
        group = QActionGroup(window)
        group.setExclusive(True)
        self.window_actions: dict[str, QAction] = {}
        for key, (text, _secs) in TIME_WINDOWS.items():
            act = QAction(text, window, checkable=True)
            act.setChecked(key == window_key)
            act.triggered.connect(lambda _=False, k=key: on_window(k))
            group.addAction(act)
            bar.addAction(act)
            view_menu.addAction(act)
            self.window_actions[key] = act
        bar.addSeparator()
        styles = QActionGroup(window)
        styles.setExclusive(True)
        self.style_actions: dict[str, QAction] = {}
        view_menu.addSeparator()
        for key in PlotStyle:
            act = QAction(key.text, window, checkable=True)
            act.setToolTip(key.tip)
            act.setChecked(key == DEFAULT_PLOT_STYLE)
            act.triggered.connect(lambda _=False, k=key: on_style(k))
            styles.addAction(act)
            bar.addAction(act)
            view_menu.addAction(act)
            self.style_actions[key] = act
        bar.addSeparator()
        self.pause_action = QAction("Pause", window, checkable=True)
        self.pause_action.setToolTip("Freeze the view (Space); sampling continues in the background")
        self.pause_action.toggled.connect(on_pause)
        bar.addAction(self.pause_action)
        view_menu.addSeparator()
        view_menu.addAction(self.pause_action)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        self.source_label = muted_label("")
        bar.addWidget(self.source_label)

    def show_paused(self, paused: bool) -> None:
        self.pause_action.setChecked(paused)
        self.pause_action.setText("Resume" if paused else "Pause")

    def set_enabled(self, on: bool) -> None:
        """Time window, plot style and pause act on plots: off while there are none."""
        for act in (*self.window_actions.values(), *self.style_actions.values(), self.pause_action):
            if act.isEnabled() != on:
                act.setEnabled(on)


def muted_label(text: str) -> QLabel:
    label = QLabel(text)
    theme.styled(label, lambda s: f"color: {s.MUTED};")
    return label
