"""The details under an agent's charts, one tab each: the module tree, the OOM
post-mortem and the allocator's segment map (per device).

Under the charts they stood one below the other, and the window had to be
scrolled to reach the module tree at 1400x900. As tabs, each is one click
away at any window size; a tab whose widget has nothing to show (no OOM yet,
no modules measured) is hidden, and the post-mortem is brought to the front
when an OOM arrives. Each page scrolls on its own.
"""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QScrollArea, QTabWidget, QVBoxLayout, QWidget

CHART_SHARE = 0.36  # of the tab's height: the charts
MIN_CHART, MAX_CHART = 150, 420
MIN_DETAILS = 170
ABOVE = 230  # about the height of the header, device title and the texts under the charts


class DetailTabs(QTabWidget):
    """Tabs of widgets that show and hide themselves (``isHidden``): a tab per widget."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setDocumentMode(True)
        self.pages: dict[str, tuple[QWidget, QScrollArea]] = {}
        self.setMinimumHeight(MIN_DETAILS)
        self.setVisible(False)

    def add(self, key: str, title: str, widget: QWidget) -> None:
        page = QScrollArea()
        page.setWidgetResizable(True)
        page.setFrameShape(QFrame.Shape.NoFrame)
        holder = QWidget()  # the widget at the top of its page, not centred in it
        column = QVBoxLayout(holder)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(widget)
        column.addStretch(1)
        page.setWidget(holder)
        self.pages[key] = (widget, page)
        self.addTab(page, title)

    def remove(self, key: str) -> None:
        _widget, page = self.pages.pop(key)
        self.removeTab(self.indexOf(page))
        page.deleteLater()

    def sync(self, front: str | None = None) -> None:
        """A tab for each widget that has something to show; ``front``: bring it forward
        (once: a tab the user picks afterwards stays picked)."""
        shown = False
        for key, (widget, page) in self.pages.items():
            wanted = not widget.isHidden()
            self.setTabVisible(self.indexOf(page), wanted)
            shown |= wanted
            if key == front and wanted:
                self.setCurrentWidget(page)
        self.setVisible(shown)

    def reveal(self, widget: QWidget) -> None:
        """Bring forward the tab holding ``widget``."""
        for w, page in self.pages.values():
            if w is widget:
                self.setCurrentWidget(page)


def chart_height(viewport_height: int) -> int:
    """The charts' height for a tab of ``viewport_height`` pixels: the details stay in view."""
    return max(MIN_CHART, min(MAX_CHART, int(viewport_height * CHART_SHARE)))


def details_height(viewport_height: int) -> int:
    """The detail tabs' height: what the charts and the texts above them leave."""
    return max(MIN_DETAILS, viewport_height - chart_height(viewport_height) - ABOVE)
