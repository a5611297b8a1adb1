"""The main window: GPU cards + timelines, the process table, a time window
choice and pause/resume; other panels join through ``add_panel``.

The GUI thread pulls ``store.latest`` / ``store.version`` and updates the
views when the store says a frame came (a store listener posts the refresh
through the bridge: the window wakes once per frame, not on a fast poll; a
slow timer stays as a safety net); nothing here calls NVML or psutil. Tests
that drive the window themselves give ``poll_ms`` and get the timer alone.
Signals for panels
built elsewhere: ``new_frame(Frame)`` on every new frame (paused or not),
``paused_changed(bool)``, ``time_window_changed(seconds or None)``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.processes.process_columns import identities
from vramscope.core.flow.pipeline import Pipeline
from vramscope.core.samples import PROMETHEUS_SOURCE, SSH_SOURCE, Frame
from vramscope.core.store.store import STAGE_OTHER
from vramscope.core.stream.first_look import is_pending
from vramscope.ui.qt import pens, theme
from vramscope.ui.window.banners import DemoBanner, NoDriverPage
from vramscope.core.settings.view_options import DEFAULT_PLOT_STYLE, DEFAULT_WINDOW, PlotStyle, TimeWindow
from vramscope.ui.window.bridge import Bridge
from vramscope.ui.qt.gil_held_paint import GilHeldPaintWindow
from vramscope.ui.monitor.gpu_panel import GpuPanel
from vramscope.ui.processes.process_table import ProcessTable

# key -> (button text, seconds; None = the whole session)
TIME_WINDOWS = {w.value: (w.text, w.seconds) for w in TimeWindow}
TABLE_MIN_INTERVAL = 0.5  # seconds of data between two table updates
LIVE_STYLES_EVERY = 10.0  # seconds between passes that free ended processes' styles
TABLE_ROWS_PER_SECOND = 4000  # a bigger table is rebuilt less often (16,384 processes: every 4 s)
PLOT_MAX_INTERVAL = 3.0  # the longest a plot waits for a redraw, whatever the window
PLOT_STEP_PX = 5  # the plots move at most this many pixels per redraw (CPU: bench/gui_vs_nvitop.py)
TABLE_FIT_ROWS = 16  # the split gives the table room for this many rows when the GPUs allow
TITLE_HOST_NAMES = 2  # a title names up to this many hosts; more are counted ("3 hosts")
WAKE_POLL_MS = 2000  # woken by each frame: the poll is only a safety net


def hosts_text(n: int) -> str:
    return f"{n} host" + ("" if n == 1 else "s")


def window_title(frame: Frame | None, session_file: str | None = None) -> str:
    """ "vramscope", "vramscope — gpu-box-1", "vramscope — 3 hosts", then the
    recorded session's file, then "demo (simulated data)" for the demo."""
    parts = ["vramscope"]
    hosts = frame.host_names if frame is not None else ()
    if hosts:
        parts.append(", ".join(hosts) if len(hosts) <= TITLE_HOST_NAMES else hosts_text(len(hosts)))
    if session_file:
        parts.append(session_file)
    if frame is not None and frame.simulated:
        parts.append("demo (simulated data)")
    return " — ".join(parts)


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
        self.colours = pens.ColourBook()
        self.paused = False
        self.window_key = window if window in TIME_WINDOWS else DEFAULT_WINDOW
        self._seen_version = -1
        self._shown_frame: Frame | None = None
        self._frames_while_paused = 0
        self._table_time = float("-inf")
        self._table_pending = False  # the table shown says the processes are being read
        self._plot_time = float("-inf")
        self._styled = 0  # labels given a colour so far (in order of first sight)
        self._labels_generation = 0  # the feed's labels_generation those were counted in
        self._live_count, self._live_time = -1, float("-inf")

        self.setWindowTitle("vramscope")
        self.resize(1400, 900)
        self._build_menus_and_toolbar()
        self._build_central()
        self._build_status_bar()

        self.timer = QTimer(self)
        self.timer.setInterval(poll_ms or WAKE_POLL_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self._wake_posted = False
        if poll_ms is None:
            store = feed.store
            store.subscribe(self._frame_stored, stage=STAGE_OTHER)
            self.destroyed.connect(lambda *_: store.unsubscribe(self._frame_stored))
            if store.latest is not None:  # stored while the window was built (its sampler's first look)
                self._frame_stored(store.latest)

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
        self._window_actions[key].setChecked(True)
        self.time_window_changed.emit(self.window_seconds)
        self.refresh(force=True)

    def set_paused(self, paused: bool) -> None:
        if paused == self.paused:
            return
        self.paused = paused
        self._frames_while_paused = 0
        self.pause_action.setChecked(paused)
        self.pause_action.setText("Resume" if paused else "Pause")
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

    def _frame_stored(self, _frame: Frame) -> None:
        """Store listener (the sampler's thread): one refresh on the GUI thread,
        however many frames come before it runs."""
        if not self._wake_posted:
            self._wake_posted = True
            self.bridge.post(self._woken)

    def _woken(self) -> None:
        self._wake_posted = False
        self.timer.start()  # the poll is a safety net: due only after a poll interval without a frame
        self.refresh()

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
    def _build_menus_and_toolbar(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.file_menu = file_menu
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        self.quit_action = quit_action

        self.view_menu = self.menuBar().addMenu("&View")
        bar = QToolBar("Time window", self)
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
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        bar.addWidget(_muted("Time window "))
        group = QActionGroup(self)
        group.setExclusive(True)
        self._window_actions: dict[str, QAction] = {}
        for key, (text, _secs) in TIME_WINDOWS.items():
            act = QAction(text, self, checkable=True)
            act.setChecked(key == self.window_key)
            act.triggered.connect(lambda _=False, k=key: self.set_window(k))
            group.addAction(act)
            bar.addAction(act)
            self.view_menu.addAction(act)
            self._window_actions[key] = act
        bar.addSeparator()
        styles = QActionGroup(self)
        styles.setExclusive(True)
        self.style_actions: dict[str, QAction] = {}
        self.view_menu.addSeparator()
        for key in PlotStyle:
            act = QAction(key.text, self, checkable=True)
            act.setToolTip(key.tip)
            act.setChecked(key == DEFAULT_PLOT_STYLE)
            act.triggered.connect(lambda _=False, k=key: self.gpu_panel.set_plot_style(k))
            styles.addAction(act)
            bar.addAction(act)
            self.view_menu.addAction(act)
            self.style_actions[key] = act
        bar.addSeparator()
        self.pause_action = QAction("Pause", self, checkable=True)
        self.pause_action.setToolTip("Freeze the view (Space); sampling continues in the background")
        self.pause_action.toggled.connect(self.set_paused)
        bar.addAction(self.pause_action)
        self.view_menu.addSeparator()
        self.view_menu.addAction(self.pause_action)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        self.source_label = _muted("")
        bar.addWidget(self.source_label)
        self.toolbar = bar

    def _build_central(self) -> None:
        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.setSpacing(6)
        self.banner = DemoBanner()
        self.banner.hide()
        lay.addWidget(self.banner)

        self.gpu_panel = GpuPanel(self.colours)
        self.gpu_panel.plot_style_changed.connect(lambda style: self.style_actions[style].setChecked(True))
        self.table = ProcessTable(self.colours)
        self.table.selection_changed.connect(self.gpu_panel.highlight)
        self.table.shown.connect(self.fit_split)  # its rows are known once built
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.gpu_panel)
        self.splitter.addWidget(self.table)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([640, 190])
        self.splitter.splitterMoved.connect(self._split_moved)
        self.split_by_user = False  # True once dragged (or restored): fit_split leaves it alone
        self._fitted_rows = -1
        self.table.setMinimumHeight(90)

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

    def _build_status_bar(self) -> None:
        self.status_text = QLabel()
        self.statusBar().addPermanentWidget(self.status_text, 1)

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
            self._set_view_controls(False)
            self._update_status()
            return
        self.pages.setCurrentWidget(self.splitter)
        self._set_view_controls(True)
        self.gpu_panel.update_cards(frame)
        # Fast sampling (10 Hz) redraws no finer than the eye can use: the table at
        # most twice a second, the plots at most once per pixel of their time axis.
        t = frame.time
        processes = sum(len(g.processes) for g in frame.gpus)
        if processes != self._live_count or abs(t - self._live_time) >= LIVE_STYLES_EVERY:
            # styles of ended processes are given again: worth a pass over every
            # process when the count changes, else now and then (16k processes: 25 ms)
            self._live_count, self._live_time = processes, t
            self.colours.set_live(i for g in frame.gpus for i in identities(g.processes))
        every = max(TABLE_MIN_INTERVAL, processes / TABLE_ROWS_PER_SECOND)
        pending = is_pending(frame)  # (the processes read at last: shown at once)
        table_shown = (
            force or t - self._table_time >= every or t < self._table_time or pending != self._table_pending
        )
        if table_shown:
            self._table_time, self._table_pending = t, pending
            self.table.show_frame(frame, self.feed.store)
        seconds = self.window_seconds
        since = None if seconds is None else t - seconds
        if force or t - self._plot_time >= self._plot_interval(since, t) or t < self._plot_time:
            self._plot_time = t
            labels = self.feed.labels()
            generation = self.feed.labels_generation
            if generation != self._labels_generation:  # labels of forgotten processes dropped
                self._labels_generation, self._styled = generation, 0
                self.colours.keep(labels)
            for ident in itertools.islice(labels, self._styled, None):
                self.colours.style(ident)  # colours in order of first sight, stable from then on
            self._styled = len(labels)
            self.gpu_panel.update_timelines(self.feed.store, since, t, labels, processes, kin=self.feed.kin())
        elif table_shown:  # the legends say the figures the table says, at the same instant
            self.gpu_panel.refresh_figures(self.feed.store)
        self.gpu_panel.highlight(self.table.selected_key)
        self._update_status()

    def _split_moved(self, *_args) -> None:
        self.split_by_user = True

    def fit_split(self, force: bool = False) -> None:
        """Give the table room for its rows (up to TABLE_FIT_ROWS), the GPUs the rest,
        each GPU row keeping its minimum; left alone once the user moved the split."""
        rows = self.table.model.rowCount()
        if self.split_by_user or (rows == self._fitted_rows and not force):
            return
        self._fitted_rows = rows
        total = sum(self.splitter.sizes())
        if total <= 0:
            return
        gpus_min = self.gpu_panel.minimum_rows_height()
        want = self.table.height_for_rows(min(rows, TABLE_FIT_ROWS))
        table = max(self.table.minimumHeight(), min(want, total - gpus_min))
        self.splitter.setSizes([total - table, table])

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fitted_rows = -1
        self.fit_split()

    def _plot_interval(self, since: float | None, t: float) -> float:
        """Seconds of data per PLOT_STEP_PX pixels of the time axis (at most PLOT_MAX_INTERVAL)."""
        start = since if since is not None else (self.feed.store.first_time or t)
        px = max((tl.plot.vb.width() for tl in self.gpu_panel.timelines.values()), default=0)
        if px < 50:
            return 0.0
        return min(PLOT_MAX_INTERVAL, PLOT_STEP_PX * (t - start) / px)

    def _update_status(self) -> None:
        frame = self.feed.store.latest
        source = getattr(self.feed.source, "name", "?")
        hosts = frame.host_names if frame is not None else ()
        if frame is not None and frame.simulated:
            src = "Source: demo (simulated)"
        elif hosts:  # other machines: how many and how, each card names its own driver
            via = {SSH_SOURCE: "over ssh", PROMETHEUS_SOURCE: "from Prometheus"}.get(source)
            n = hosts_text(len(hosts))
            src = f"Source: {n} {via}" if via else f"Source: {source} · {n}"
        else:
            src = f"Source: {source}"
            if frame is not None and frame.driver_version:
                src += f" · driver {frame.driver_version}"
        self.source_label.setText(src + "  ")
        parts = (
            [f"sampling every {self.feed.interval:g} s"]
            if self.session_file is None
            else ["recorded session: move the scrubber below, zoom the plots with the mouse wheel"]
        )
        if frame is not None and not frame.gpus and self.session_file is None:
            # nothing is being sampled: say what really happens
            parts = ["no GPU to sample: checking every few seconds whether a driver has appeared"]
        elif frame is not None:
            parts.append("last sample " + time.strftime("%H:%M:%S", time.localtime(frame.time)))
            if frame.error and frame.gpus:
                parts.append(frame.error)
        trouble = self.feed.trouble()
        if trouble:
            parts.append(f"⚠ {trouble}")
        if self.paused:
            parts.insert(
                0, f"PAUSED — view frozen, sampling continues ({self._frames_while_paused} new samples)"
            )
        self.status_text.setText("  ·  ".join(parts))

    def _set_view_controls(self, on: bool) -> None:
        """Time window, plot style and pause act on plots: off while there are none."""
        for act in (*self._window_actions.values(), *self.style_actions.values(), self.pause_action):
            if act.isEnabled() != on:
                act.setEnabled(on)

    def _demo_started(self, _result, error) -> None:
        self.no_driver.demo_button.setEnabled(True)
        if error is not None:
            self.statusBar().showMessage(f"Could not start the demo: {error}", 10000)
            return
        self.statusBar().showMessage("Showing the demo (simulated data)", 5000)
        self.refresh(force=True)


def _muted(text: str) -> QLabel:
    label = QLabel(text)
    theme.styled(label, lambda s: f"color: {s.MUTED};")
    return label
