"""The main window: GPU cards + timelines, the process table, a time window
choice and pause/resume; other panels join through ``add_panel``.

The GUI thread pulls ``store.latest`` / ``store.version`` and updates the
views when the store says a frame came (a store listener posts the refresh
through the bridge: the window wakes once per frame, not on a fast poll; a
slow timer stays as a safety net); nothing here calls NVML or psutil. Tests
that drive the window themselves give ``poll_ms`` and get the timer alone.
What the window is made of: the toolbar (ui/window/view_controls.py), the
Monitor tab's split (ui/window/monitor_split.py), the wake on each stored frame
(ui/window/frame_wake.py), one frame out to the cards, plots and table
(ui/window/frame_fanout.py), the title and status texts (ui/window/status_line.py).
Signals for panels built elsewhere: ``new_frame(Frame)`` on every new frame (paused or not),
``paused_changed(bool)``, ``time_window_changed(seconds or None)``.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QLabel, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from vramscope.core.flow.pipeline import Pipeline
from vramscope.core.samples import Frame
from vramscope.core.settings.view_options import DEFAULT_WINDOW
from vramscope.ui.monitor.gpu_panel import GpuPanel
from vramscope.ui.processes.process_table import ProcessTable
from vramscope.ui.qt.gil_held_paint import GilHeldPaintWindow
from vramscope.ui.qt.pens import ColourBook
from vramscope.ui.window.banners import DemoBanner, NoDriverPage
from vramscope.ui.qt.bridge import Bridge
from vramscope.ui.window.frame_fanout import FrameFanOut
from vramscope.ui.window.frame_wake import FrameWake
from vramscope.ui.window.monitor_split import MonitorSplit
from vramscope.ui.window.status_line import source_text, status_text, window_title
from vramscope.ui.window.view_controls import TIME_WINDOWS, ViewControls

WAKE_POLL_MS = 2000  # woken by each frame: the poll is only a safety net


def default_demo_source():
    from vramscope.sources.demo.simulated import SimulatedSource

    return SimulatedSource(seed=1)


class MainWindow(GilHeldPaintWindow):
    new_frame = Signal(object)
    paused_changed = Signal(bool)
    time_window_changed = Signal(object)

    def __init__(
        self,
        feed: Pipeline,
        bridge: Bridge | None = None,
        window: str = DEFAULT_WINDOW,
        demo_factory: Callable[[], object] | None = None,
        session_file: str | None = None,
        poll_ms: int | None = None,
        parent=None,
    ):
        super().__init__(parent)
        self.feed = feed
        self.bridge = bridge or Bridge(self)
        self.demo_factory = demo_factory or default_demo_source
        self.session_file = session_file
        self.colours = ColourBook()
        self.paused = False
        self.window_key = window if window in TIME_WINDOWS else DEFAULT_WINDOW
        self._seen_version = -1
        self._shown_frame: Frame | None = None
        self._frames_while_paused = 0

        self.setWindowTitle("vramscope")
        self.resize(1400, 900)
        self._build_menus()
        self._build_central()
        self.fanout = FrameFanOut(feed, self.colours, self.gpu_panel, self.table)
        self.status_text = QLabel()
        self.statusBar().addPermanentWidget(self.status_text, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(poll_ms or WAKE_POLL_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self.wake: FrameWake | None = None
        if poll_ms is None:
            self.wake = FrameWake(feed.store, self.bridge, self.timer, self.refresh, self)

    # -- public API -----------------------------------------------------------------
    @property
    def store(self):
        return self.feed.store

    @property
    def window_seconds(self) -> float | None:
        return TIME_WINDOWS[self.window_key][1]

    def add_panel(self, title: str, widget: QWidget, dock: Qt.DockWidgetArea | None = None) -> QWidget:
        """A tab beside "Monitor" (default) or, with ``dock``, a dock widget."""
        if dock is None:
            self.tabs.addTab(widget, title)
            return widget
        d = QDockWidget(title, self)
        d.setObjectName(f"dock-{title}")
        d.setWidget(widget)
        self.addDockWidget(dock, d)
        self.view_menu.addAction(d.toggleViewAction())
        return d

    def set_window(self, key: str) -> None:
        if key not in TIME_WINDOWS:
            raise ValueError(f"unknown time window {key!r}; choose from {', '.join(TIME_WINDOWS)}")
        self.window_key = key
        self.controls.window_actions[key].setChecked(True)
        self.time_window_changed.emit(self.window_seconds)
        self.refresh(force=True)

    def set_paused(self, paused: bool) -> None:
        if paused == self.paused:
            return
        self.paused = paused
        self._frames_while_paused = 0
        self.controls.show_paused(paused)
        self.paused_changed.emit(paused)
        if not paused:
            self.refresh(force=True)
        self._update_status()

    def refresh(self, force: bool = False) -> None:
        """Pull the latest frame; redraw unless paused. Cheap when nothing changed."""
        store = self.feed.store
        version = store.version
        frame = store.latest
        if frame is None or (version == self._seen_version and not force):
            return
        fresh = version != self._seen_version
        self._seen_version = version
        if self.paused:
            if fresh:
                self._frames_while_paused += 1
                self.new_frame.emit(frame)
            self._update_status()
            return
        self._show(frame, force)
        if fresh:  # after the views exist, so panels can draw on them
            self.new_frame.emit(frame)

    def show_moment(self, frame: Frame) -> None:
        """Cards and table at one moment (a recorded session's scrubber); timelines stay."""
        self.gpu_panel.update_cards(frame)
        self.table.show_frame(frame, self.feed.store)

    def show_demo(self) -> None:
        """Switch the feed to the simulated source, without a restart."""
        self.no_driver.demo_button.setEnabled(False)
        self.statusBar().showMessage("Starting the demo…")
        factory, feed = self.demo_factory, self.feed
        self.bridge.run_in_thread(
            lambda: feed.switch_source(factory()), self._demo_started, name="vramscope-switch-source"
        )

    # -- building ---------------------------------------------------------------------
    def _build_menus(self) -> None:
        self.file_menu = self.menuBar().addMenu("&File")
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.quit_action.triggered.connect(self.close)
        self.file_menu.addAction(self.quit_action)
        self.view_menu = self.menuBar().addMenu("&View")
        self.controls = ViewControls(
            self,
            self.view_menu,
            self.window_key,
            self.set_window,
            lambda style: self.gpu_panel.set_plot_style(style),
            self.set_paused,
        )
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.controls.toolbar)

    def _build_central(self) -> None:
        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.setSpacing(6)
        self.banner = DemoBanner()
        self.banner.hide()
        lay.addWidget(self.banner)

        self.gpu_panel = GpuPanel(self.colours)
        self.gpu_panel.plot_style_changed.connect(
            lambda style: self.controls.style_actions[style].setChecked(True)
        )
        self.table = ProcessTable(self.colours)
        self.table.selection_changed.connect(self.gpu_panel.highlight)
        self.splitter = MonitorSplit(self.gpu_panel, self.table)

        self.no_driver = NoDriverPage()
        self.no_driver.demo_requested.connect(self.show_demo)
        self.waiting = QLabel("Waiting for the first sample…")
        self.waiting.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.pages = QStackedWidget()
        for page in (self.waiting, self.splitter, self.no_driver):
            self.pages.addWidget(page)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.pages, "Monitor")
        lay.addWidget(self.tabs, 1)
        self.setCentralWidget(central)

    # -- updating ---------------------------------------------------------------------
    def _show(self, frame: Frame, force: bool = False) -> None:
        self._shown_frame = frame
        self.banner.setVisible(frame.simulated)
        title = window_title(frame, self.session_file)
        if title != self.windowTitle():
            self.setWindowTitle(title)
        if not frame.gpus:
            if frame.error:
                self.no_driver.show_error(frame.error, can_demo=not frame.simulated)
            else:
                self.no_driver.show_error(
                    "The NVIDIA driver reports no GPUs on this machine.",
                    can_demo=not frame.simulated,
                    title="No NVIDIA GPU found",
                )
            self.pages.setCurrentWidget(self.no_driver)
            self.controls.set_enabled(False)
            self._update_status()
            return
        self.pages.setCurrentWidget(self.splitter)
        self.controls.set_enabled(True)
        self.fanout.show(frame, self.window_seconds, force)
        self._update_status()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.splitter.refit()

    def _update_status(self) -> None:
        frame = self.feed.store.latest
        self.controls.source_label.setText(source_text(frame, getattr(self.feed.source, "name", "?")) + "  ")
        self.status_text.setText(
            status_text(
                frame,
                self.feed.interval,
                self.session_file,
                self.feed.trouble(),
                self._frames_while_paused if self.paused else None,
            )
        )

    def _demo_started(self, _result, error) -> None:
        self.no_driver.demo_button.setEnabled(True)
        if error is not None:
            self.statusBar().showMessage(f"Could not start the demo: {error}", 10000)
            return
        self.statusBar().showMessage("Showing the demo (simulated data)", 5000)
        self.refresh(force=True)
