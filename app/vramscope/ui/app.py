"""Start the window: QApplication, store + sampler around a source, the timer.

``run(args)`` is what ``vramscope`` (no subcommand) ends up calling, through
commands/gui.py, which imports this module only when the window is wanted.
"""

from __future__ import annotations

import logging
import pathlib
import sys

from vramscope import __version__

log = logging.getLogger(__name__)

APP_NAME = "vramscope"


def icon_files() -> list[pathlib.Path]:
    """The app icon in every size found: shipped in the package, or in a checkout's resources/."""
    here = pathlib.Path(__file__).resolve()
    for base in (here.parents[1] / "resources" / "icons", here.parents[3] / "resources" / "icons"):
        files = sorted(base.glob("vramscope*.png")) + sorted(base.glob("vramscope*.svg"))
        if files:
            return files
    return []


def create_app(argv: list[str] | None = None):
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from vramscope.ui import theme

    app = QApplication.instance() or QApplication(argv if argv is not None else [sys.argv[0]])
    app.setApplicationName(APP_NAME)
    app.setApplicationDisplayName(APP_NAME)
    app.setApplicationVersion(__version__)
    app.setDesktopFileName(APP_NAME)
    files = icon_files()
    if files:
        icon = QIcon()
        for f in files:
            icon.addFile(str(f))
        app.setWindowIcon(icon)
    theme.apply(app)
    return app


def build_window(args, source=None):
    """The feed (started) and the main window for ``args``; the app must exist."""
    from vramscope.commands.common import open_source
    from vramscope.ui.bridge import Bridge
    from vramscope.ui.feed import LiveFeed
    from vramscope.ui.main_window import DEFAULT_WINDOW, MainWindow

    if source is None:
        source = _open_source_or_error(args, open_source)
    feed = LiveFeed(source, interval=getattr(args, "interval", 1.0))
    feed.start()
    bridge = Bridge()
    window = MainWindow(feed, bridge, window=getattr(args, "window", None) or DEFAULT_WINDOW,
                        session_file=getattr(args, "file", None))
    bridge.setParent(window)
    return feed, window


def run(args) -> int:
    from PySide6.QtCore import QTimer

    app = create_app()
    feed, window = build_window(args)
    app.aboutToQuit.connect(feed.close)
    if getattr(args, "file", None):
        window.statusBar().showMessage(
            f"Reopening recorded sessions is not available in this build ({args.file}); "
            "showing live data.", 15000)
    window.show()
    quit_after = getattr(args, "quit_after", None)
    if quit_after is not None:
        QTimer.singleShot(int(quit_after * 1000), app.quit)
    return int(app.exec())


def _open_source_or_error(args, open_source):
    """A source that cannot even be built (no pynvml, no driver) becomes an error
    source, so the window opens and offers the demo instead of a traceback."""
    try:
        return open_source(args)
    except Exception as exc:  # pynvml missing, library not loadable, ...
        log.warning("cannot open the source: %s", exc)
        return ErrorSource(f"NVIDIA driver not available: {exc}")


class ErrorSource:
    """Reports the same frame-level error every pass."""

    simulated = False

    def __init__(self, message: str, name: str = "nvml"):
        self.name = name
        self.message = message

    def sample(self, now: float):
        from vramscope.core.samples import Frame
        return Frame(time=now, source=self.name, error=self.message)

    def close(self) -> None:
        pass
