"""Start the window: QApplication, store + sampler around a source, the timer.

``run(args)`` is what ``vramscope`` (no subcommand) ends up calling, through
commands/gui.py, which imports this module only when the window is wanted.
"""

from __future__ import annotations

import gc
import logging
import os
import pathlib
import sys

from vramscope import __version__

log = logging.getLogger(__name__)

APP_NAME = "vramscope"


def icon_files() -> list[pathlib.Path]:
    """The app icon in every size found: shipped in the package, or in a checkout's resources/."""
    here = pathlib.Path(__file__).resolve()
    for base in (here.parents[2] / "resources" / "icons", here.parents[4] / "resources" / "icons"):
        files = sorted(base.glob("vramscope*.png")) + sorted(base.glob("vramscope*.svg"))
        if files:
            return files
    return []


def create_app(argv: list[str] | None = None, theme_mode: str = "dark"):
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from vramscope.ui.qt import theme
    from vramscope.ui.qt.raster_threads import fill_on_the_painting_thread

    fill_on_the_painting_thread()  # (read by Qt once, when it first paints)
    app = QApplication.instance() or QApplication(argv if argv is not None else [sys.argv[0]])
    app.setApplicationName(APP_NAME)
    app.setApplicationDisplayName(APP_NAME)
    app.setApplicationVersion(__version__)
    # On Wayland the app id must be the .desktop file's name for the menu entry and
    # icon to attach to the window; on X11 the class stays "vramscope" (StartupWMClass).
    app.setDesktopFileName("io.github.vramscope.Vramscope")
    files = icon_files()
    if files:
        icon = QIcon()
        for f in files:
            icon.addFile(str(f))
        app.setWindowIcon(icon)
    theme.apply(app, theme_mode)  # before any module that formats style sheets is imported
    return app


def build_window(
    args, source=None, start: bool = True, poll_ms: int | None = None, settings=None, sampler: bool = False
):
    """The pipeline (started unless told), the main window and its panels; the app must exist.

    ``settings`` (core/user_settings.Settings, command line already merged) gives the
    interval, time window, read-only mode, recording and thresholds; without it
    (tests) they come from ``args`` alone. With ``sampler`` (the app) this
    machine is sampled and recorded by a process of its own
    (sources/remote/local_sampler.py); the window only reads it.
    """
    from vramscope.ui.window.bridge import Bridge
    from vramscope.ui.qt.imported_sources import forget_imported_sources
    from vramscope.ui.window.main_window import DEFAULT_WINDOW, MainWindow

    if source is None and sampler:  # this machine, --host and --from-prometheus alike
        from vramscope.sources.remote.local_sampler import local_sampler_source

        source = local_sampler_source(args, settings)
    if source is None:
        source = _open_source_or_error(args)
    monitor = start_monitor(source, args, settings)
    services = Services(monitor)
    if start:
        monitor.pipeline.start()
    bridge = Bridge()
    window_key = (
        settings.window if settings is not None else (getattr(args, "window", None) or DEFAULT_WINDOW)
    )
    window = MainWindow(
        monitor.pipeline, bridge, window=window_key, session_file=getattr(args, "file", None), poll_ms=poll_ms
    )
    bridge.setParent(window)
    services.attach(window)
    if hasattr(source, "session_path"):
        from vramscope.ui.window.sampler_banner import attach_sampler_banner

        attach_sampler_banner(window, source)
    if settings is not None:
        from vramscope.ui.window.window_setup import restore_layout, setup_desktop

        restore_layout(window, settings)
        setup_desktop(window, settings)
    # What building the window left (the plotting and Qt modules it imported,
    # its widgets: some 25k objects) is collected once here, before the window
    # is shown, not by the collector's own full collection in the window's first
    # seconds on screen (a pause of 40-60 ms on a big box). No threshold or other
    # setting of the collector changes (https://docs.python.org/3/library/gc.html).
    # np.median (the growth column's and the rules' trends) imports numpy.ma on its
    # first call (its NaN check reads np.ma): 50-85 ms holding the GIL in the
    # table's first build -- now within seconds, the demo opening on its story so
    # far. Imported here, before the window shows, with what start-up imports.
    import numpy.ma  # noqa: F401

    forget_imported_sources()
    gc.collect()
    return monitor.pipeline, window


def start_monitor(source, args, settings=None):
    """The window's monitor (core/flow/monitor.py): diagnostics, end-process actions,
    the session recorder (on by default; only real GPUs are written), Prometheus."""
    from vramscope.core.session import RetentionPolicy
    from vramscope.sources.assembly import build_monitor, session_recorder
    from vramscope.sources.choose import enrichers_for
    from vramscope.core.end_process.actions import ProcessActions
    from vramscope.core.samples import PROMETHEUS_SOURCE
    from vramscope.sources.remote.hosts import HostActions, HostsSource

    if settings is not None:
        read_only, record, interval = settings.read_only, settings.recording, settings.interval
        diagnostics, cap = settings.diagnostics, settings.session_cap_bytes
    else:
        read_only = bool(getattr(args, "read_only", False))
        record = getattr(args, "record", True)
        interval = getattr(args, "interval", None) or 1.0
        diagnostics = cap = None
    enrichers, engine = enrichers_for, None
    sampled_apart = hasattr(source, "session_path")  # by the sampler process, which records
    if sampled_apart:  # and judges: the window takes its alerts
        from vramscope.core.detectors.taken import TakenAlerts
        from vramscope.sources.remote.local_sampler import window_enrichers as enrichers

        record, engine = False, TakenAlerts(source.judged)
    monitor = build_monitor(
        source,
        enrichers=enrichers,
        interval=interval,
        diagnostics=diagnostics,
        read_only=read_only,
        actions=True,  # diagnostics None: the settings file's (tests)
        engine=engine,
    )
    if isinstance(source, HostsSource):  # ending processes over each host's ssh channel
        monitor.actions = HostActions(source, read_only=read_only)
    elif sampled_apart:  # through the sampler process, which records them
        from vramscope.sources.remote.local_sampler import SamplerActions

        monitor.actions = SamplerActions(source, read_only=read_only)
    elif source.name == PROMETHEUS_SOURCE:  # a fleet is only looked at
        monitor.actions = ProcessActions(read_only=True)
    if record:
        retention = RetentionPolicy() if cap is None else RetentionPolicy(max_bytes=cap)
        monitor.record(session_recorder(monitor, source, "vramscope", retention=retention))
    address = getattr(args, "prometheus", None)
    if address:
        try:
            monitor.serve_metrics(address)
        except (OSError, ValueError) as exc:  # the port is taken: the window runs without it
            monitor.metrics_error = f"Prometheus: cannot serve on {address}: {exc}"
            log.warning("%s", monitor.metrics_error)
    return monitor


class Services:
    """The window's side of its monitor (core/flow/monitor.py): the panels attached to it."""

    def __init__(self, monitor):
        self.monitor = monitor
        self.panels = None

    @property
    def engine(self):
        return self.monitor.engine

    @property
    def actions(self):
        return self.monitor.actions

    @property
    def recorder(self):
        return self.monitor.recorder

    @property
    def read_only(self) -> bool:
        return self.monitor.read_only

    @read_only.setter
    def read_only(self, value: bool) -> None:
        self.monitor.read_only = value

    def attach(self, window) -> None:
        from vramscope.ui.window.panels import attach_panels

        self.panels = attach_panels(window, self.engine, self.actions, self.read_only)
        from vramscope.core.samples import PROMETHEUS_SOURCE, REMOTE_SOURCES

        source = self.monitor.pipeline.source
        if source.name in REMOTE_SOURCES:  # --host, --from-prometheus
            from vramscope.ui.monitor.hosts_bar import attach_hosts_bar

            attach_hosts_bar(window)
        if source.name == PROMETHEUS_SOURCE:
            from vramscope.ui.monitor.fleet_view import attach_fleet_view

            attach_fleet_view(window, source, self.engine)
        window.services = self
        _add_session_actions(window, self)
        if self.monitor.metrics_error:
            window.statusBar().showMessage(self.monitor.metrics_error, 30000)
        elif (
            self.recorder is not None or "--record-session" in getattr(source, "options", ())
        ) and not self.monitor.pipeline.simulated:
            window.statusBar().showMessage("Recording this session (File → Export to share it)", 8000)

    def close(self) -> None:
        self.monitor.close()


def open_session_window(path: str, args=None):
    """A window over a recorded session (no sampling); raises SessionError."""
    from vramscope.core.flow.pipeline import Pipeline
    from vramscope.core.samples import GpuProcess
    from vramscope.core.session import load_into_store, open_session
    from vramscope.core.flow.source import ErrorSource
    from vramscope.core.store.store import Store
    from vramscope.ui.window.bridge import Bridge
    from vramscope.ui.window.main_window import MainWindow
    from vramscope.ui.window.panels import attach_panels
    from vramscope.ui.monitor.session_view import attach_session
    from vramscope.ui.window.window_setup import add_help_menu

    import sqlite3

    from vramscope.core.session.errors import UNREADABLE, unreadable

    reader = open_session(path)
    try:
        store = load_into_store(reader, Store())
    except (sqlite3.Error, *UNREADABLE) as exc:  # the reader skips damage it foresees
        reader.close()
        raise unreadable(path, exc) from exc
    feed = Pipeline(ErrorSource("recorded session", name="session"), store)
    feed.learn_labels(GpuProcess(pid=r.pid, used=None, info=r.info()) for r in reader.processes().values())
    bridge = Bridge()
    window = MainWindow(feed, bridge, window="all", session_file=str(path))
    bridge.setParent(window)
    window.panels = attach_panels(window, read_only=True)
    window.refresh(force=True)
    window.reader = reader
    window.scrubber = attach_session(window, reader, str(path))
    _add_session_actions(window, None, reader)
    add_help_menu(window)
    return feed, window


def _add_session_actions(window, services, reader=None) -> None:
    """File → Open session…, Export session…"""
    from PySide6.QtGui import QAction, QKeySequence

    menu = window.file_menu
    first = menu.actions()[0] if menu.actions() else None
    open_action = QAction("&Open session…", window)
    open_action.setShortcut(QKeySequence.StandardKey.Open)
    open_action.triggered.connect(lambda: _ask_open(window))
    export_action = QAction("&Export session…", window)
    export_action.setShortcut(QKeySequence("Ctrl+E"))

    def current_path():
        if reader is not None:
            return reader.path
        recorder = services.recorder if services is not None else None
        if recorder is None and services is not None:  # recorded by the sampler process
            return getattr(services.monitor.pipeline.source, "session_path", None)
        return recorder.path if recorder is not None else None

    export_action.triggered.connect(lambda: _ask_export(window, current_path()))
    panels = services.panels if services is not None else getattr(window, "panels", None)
    if panels is not None:  # the OOM post-mortem names the session its full report is in
        panels.agents.session = current_path
    snapshot_action = QAction("Open &snapshot…", window)
    snapshot_action.triggered.connect(lambda: _ask_open_snapshot(window))
    menu.insertAction(first, open_action)
    menu.insertAction(first, snapshot_action)
    menu.insertAction(first, export_action)
    menu.insertSeparator(first)


def _ask_open_snapshot(window) -> None:
    """File → Open snapshot…: a PyTorch memory snapshot in a viewer window of its own."""
    from PySide6.QtWidgets import QFileDialog

    from vramscope.ui.snapshot.window import SNAPSHOT_FILES, open_snapshot_window

    path, _ = QFileDialog.getOpenFileName(window, "Open a PyTorch memory snapshot", "", SNAPSHOT_FILES)
    if path:
        window.snapshot_windows = [
            *getattr(window, "snapshot_windows", []),
            open_snapshot_window(path, window),
        ]


def _ask_open(window) -> None:
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    from vramscope.core.session import SessionError, default_directory

    path, _ = QFileDialog.getOpenFileName(
        window,
        "Open a recorded session",
        str(default_directory()),
        "vramscope sessions (*.vramscope *.sqlite *.db);;All files (*)",
    )
    if not path:
        return
    try:
        _feed, other = open_session_window(path)
    except SessionError as exc:
        QMessageBox.warning(window, "Cannot open the session", str(exc))
        return
    _keep(other)
    other.show()


def _ask_export(window, session_path) -> None:
    from PySide6.QtWidgets import QFileDialog

    from vramscope.core.export import FORMATS
    from vramscope.core.session import open_session

    if session_path is None:
        window.statusBar().showMessage(
            "Nothing to export: this window is not recording (demo data, or recording is off). "
            "Use `vramscope record` or open a recorded session.",
            10000,
        )
        return
    filters = {"Perfetto / Chrome trace (*.json)": "perfetto", "CSV, long form (*.csv)": "csv"}
    out, chosen = QFileDialog.getSaveFileName(window, "Export session", "", ";;".join(filters))
    if not out:
        return
    fmt = filters.get(chosen, "perfetto")
    window.statusBar().showMessage(f"Exporting to {out}…")

    def work():
        reader = open_session(session_path)
        try:
            return FORMATS[fmt](reader, out)
        finally:
            reader.close()

    def done(_result, error):
        window.statusBar().showMessage(
            f"Export failed: {error}" if error is not None else f"Exported to {out}", 15000
        )

    window.bridge.run_in_thread(work, done, name="vramscope-export")


_windows: list = []


def _keep(window) -> None:
    """Extra windows (reopened sessions) live until closed."""
    _windows.append(window)
    window.destroyed.connect(lambda *_: _windows.remove(window) if window in _windows else None)


def run(args) -> int:
    from PySide6.QtCore import QTimer

    from vramscope.core.session import SessionError
    from vramscope.core.snapshot.safe_load import SNAPSHOT_SUFFIXES, is_pickle
    from vramscope.core.settings.user_settings import Settings
    from vramscope.ui.window.qsettings_import import import_qsettings

    settings = Settings()
    import_qsettings(settings)  # once: what earlier versions kept with QSettings
    settings.merge_args(args)
    sampler = None
    if not getattr(args, "file", None):
        from vramscope.sources.remote.local_sampler import local_sampler_source

        sampler = local_sampler_source(args, settings)  # starts while Qt loads and the window is built
    app = create_app(theme_mode=settings.theme)
    if getattr(args, "file", None) and (is_pickle(args.file) or args.file.endswith(SNAPSHOT_SUFFIXES)):
        from vramscope.ui.snapshot.window import open_snapshot_window

        if not os.path.isfile(args.file):
            print(f"vramscope: {args.file}: no such snapshot file", file=sys.stderr)
            return 2
        window = open_snapshot_window(
            args.file, on_error=lambda text: print(f"vramscope: {text}", file=sys.stderr)
        )
    elif getattr(args, "file", None):
        try:
            feed, window = open_session_window(args.file, args)
        except SessionError as exc:
            print(f"vramscope: {exc}", file=sys.stderr)
            return 2
        app.aboutToQuit.connect(feed.close)
        gc.collect()  # (what building it left: build_window collects its own)
    else:
        feed, window = build_window(args, source=sampler, settings=settings, sampler=True)
        app.aboutToQuit.connect(window.services.close)
    freeze_startup_heap()
    window.show()
    quit_after = getattr(args, "quit_after", None)
    if quit_after is not None:
        QTimer.singleShot(int(quit_after * 1000), app.quit)
    if getattr(args, "shots", None):
        from vramscope.ui.window.window_shots import schedule

        schedule(window, app, args.shots, args.shots_after)
    _quit_on_termination(app)
    return int(app.exec())


def freeze_startup_heap() -> None:
    """The window built, before it shows: what start-up made (modules, functions, classes,
    Qt's wrappers; ~68k objects, nearly all living as long as the process) leaves the
    collector's generations (``gc.freeze``, Python's gc module documentation). Start-up's
    garbage was collected just before (``build_window``), so it is freed, not kept.

    A full collection holds the GIL while it walks every tracked object; the window's
    start-up heap made it 45-65 ms on a 2-core box whatever the window did, and at 16 GPUs
    x 1,024 processes it was the window's longest event-loop stall. Frozen, a full
    collection walks what the window made since: 10-16 ms there at the median, 32 ms at
    most (bench/window_scale.py, bench/README.md). What the window makes later is collected as before; a start-up object
    that ends in a reference cycle later is kept (a one-off, bounded by start-up)."""
    gc.freeze()


def _quit_on_termination(app) -> None:
    """SIGTERM / SIGHUP (logout, `kill`, systemd) end the window like closing it:
    the recorder's final commit and checkpoint run, so no -wal/-shm files stay."""
    import signal
    import socket

    from PySide6.QtCore import QSocketNotifier

    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if signum is not None:
            signal.signal(signum, lambda *_: app.quit())
    # Python runs signal handlers only between bytecodes: a signal wakes Qt's loop
    # through a socket (signal.set_wakeup_fd), whose Python slot lets the handler run
    # (a timer waking the GUI thread four times a second did it before)
    ours, theirs = socket.socketpair()
    for end in (ours, theirs):
        end.setblocking(False)
    signal.set_wakeup_fd(theirs.fileno())
    notifier = QSocketNotifier(ours.fileno(), QSocketNotifier.Type.Read, app)
    notifier.activated.connect(lambda *_: _drain(ours))
    app._signal_wakeup = (ours, theirs, notifier)  # kept as long as the app


def _drain(sock) -> None:
    try:
        while sock.recv(64):
            pass
    except OSError:  # nothing more to read (non-blocking)
        pass


def _open_source_or_error(args):
    """A source that cannot even be built (no pynvml, no driver) becomes an error
    source, so the window opens and offers the demo instead of a traceback."""
    from vramscope.core.flow.source import ErrorSource
    from vramscope.sources.choose import open_source

    try:
        return open_source(args)
    except Exception as exc:  # pynvml missing, library not loadable, ...
        log.warning("cannot open the source: %s", exc)
        return ErrorSource(f"NVIDIA driver not available: {exc}")
