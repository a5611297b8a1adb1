"""Recorded sessions in the window: a window over a session file
(``open_session_window``), and the File menu's Open session…, Open snapshot…
and Export session… (``add_session_actions``), for the live window and a
reopened session's alike. Heavy imports stay inside the functions: the live
window's start-up does not pay for them.
"""

from __future__ import annotations


def open_session_window(path: str, args=None):
    """A window over a recorded session (no sampling); raises SessionError."""
    from vramscope.core.flow.pipeline import Pipeline
    from vramscope.core.samples import GpuProcess
    from vramscope.core.session import load_into_store, open_session
    from vramscope.core.flow.source import ErrorSource
    from vramscope.core.store.store import Store
    from vramscope.ui.qt.bridge import Bridge
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
    add_session_actions(window, None, reader)
    add_help_menu(window)
    return feed, window


def add_session_actions(window, services, reader=None) -> None:
    """File → Open session…, Open snapshot…, Export session…"""
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
