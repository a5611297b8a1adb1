"""Start the window: the QApplication, the window and its panels around a
source (its monitor: ui/window/window_monitor.py), a recorded session's or a
snapshot's window (ui/window/session_files.py), the process's signals.

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
    from vramscope.ui.qt.bridge import Bridge
    from vramscope.ui.qt.imported_sources import forget_imported_sources
    from vramscope.ui.window.main_window import DEFAULT_WINDOW, MainWindow

    if source is None and sampler:  # this machine, --host and --from-prometheus alike
        from vramscope.sources.remote.local_sampler import local_sampler_source

        source = local_sampler_source(args, settings)
    if source is None:
        source = _open_source_or_error(args)
    from vramscope.ui.window.window_monitor import Services, start_monitor

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


def run(args) -> int:
    from PySide6.QtCore import QTimer

    from vramscope.core.session import SessionError
    from vramscope.core.snapshot.safe_load import SNAPSHOT_SUFFIXES, is_pickle
    from vramscope.core.settings.user_settings import Settings
    from vramscope.ui.window.session_files import open_session_window
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
