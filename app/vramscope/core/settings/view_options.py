"""The view's choices, defined once: time windows, colour themes, plot styles.

The window's toolbar and settings dialog, the settings file and the command
line (`vramscope --window/--theme`) all offer these members and nothing
else. Qt-free, so every command can read and check a saved choice.
"""

from __future__ import annotations

from vramscope.agent.protocol import StrEnum


class TimeWindow(StrEnum):
    """How much history the plots show."""

    MINUTE = "1m"
    TEN_MINUTES = "10m"
    HOUR = "1h"
    ALL = "all"  # the whole session

    @property
    def seconds(self) -> float | None:
        return _WINDOW_SECONDS[self]

    @property
    def text(self) -> str:
        return _WINDOW_TEXT[self]


_WINDOW_SECONDS = {
    TimeWindow.MINUTE: 60.0,
    TimeWindow.TEN_MINUTES: 600.0,
    TimeWindow.HOUR: 3600.0,
    TimeWindow.ALL: None,
}
_WINDOW_TEXT = {
    TimeWindow.MINUTE: "1 min",
    TimeWindow.TEN_MINUTES: "10 min",
    TimeWindow.HOUR: "1 h",
    TimeWindow.ALL: "All",
}
DEFAULT_WINDOW = TimeWindow.TEN_MINUTES


class Theme(StrEnum):
    """The colours: follow the desktop, or a fixed scheme."""

    SYSTEM = "system"
    LIGHT = "light"
    DARK = "dark"

    @property
    def text(self) -> str:
        return _THEME_TEXT[self]


_THEME_TEXT = {Theme.SYSTEM: "Follow the desktop", Theme.LIGHT: "Light", Theme.DARK: "Dark"}
DEFAULT_THEME = Theme.SYSTEM


class PlotStyle(StrEnum):
    """How a GPU's processes are drawn over time."""

    STACKED = "stacked"  # what fills each GPU, largest at the bottom
    LINES = "lines"  # one line per process

    @property
    def text(self) -> str:
        return self.value.capitalize()

    @property
    def tip(self) -> str:
        return _STYLE_TIPS[self]


_STYLE_TIPS = {
    PlotStyle.STACKED: "Processes stacked: what fills each GPU",
    PlotStyle.LINES: "One line per process",
}
DEFAULT_PLOT_STYLE = PlotStyle.STACKED
