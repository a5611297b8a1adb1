"""What makes the live window a desktop app: saved layout, Settings, Help,
keyboard shortcuts and "find a process". Kept apart from main_window.py so
the monitor view stays a view."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QLineEdit, QMessageBox

from vramscope.ui.qt import theme
from vramscope.ui.window.shortcuts import install_shortcuts, table_rows


def restore_layout(window, settings) -> None:
    """Geometry, dock/toolbar state and the cards/table split as the user left them;
    saved again when the app quits."""
    if settings.geometry:
        window.restoreGeometry(settings.geometry)
    if settings.window_state:
        window.restoreState(settings.window_state)
    if settings.splitter_state:  # saved only when the user moved the split
        window.splitter.restoreState(settings.splitter_state)
        window.splitter.by_user = True
    # the view choices are saved as soon as they are made (a crash keeps them too)
    window.table.columns.set_hidden(settings.hidden_columns)
    window.table.columns_changed.connect(lambda hidden: setattr(settings, "hidden_columns", hidden))
    window.gpu_panel.set_plot_style(settings.plot_style)
    window.gpu_panel.plot_style_changed.connect(lambda style: setattr(settings, "plot_style", style))
    window.gpu_panel.set_card_details(settings.card_details)
    window.gpu_panel.card_details_changed.connect(lambda on: setattr(settings, "card_details", on))

    def save() -> None:
        settings.geometry = bytes(window.saveGeometry())
        settings.window_state = bytes(window.saveState())
        settings.splitter_state = bytes(window.splitter.saveState()) if window.splitter.by_user else None
        settings.sync()

    QApplication.instance().aboutToQuit.connect(save)
    window.save_layout = save


def setup_desktop(window, settings) -> None:
    from vramscope.ui.window.panels import end_selected_process

    settings_action = QAction("&Settings…", window)
    settings_action.triggered.connect(lambda: open_settings(window, settings))
    window.file_menu.insertAction(window.quit_action, settings_action)
    window.file_menu.insertSeparator(window.quit_action)

    about_action = add_help_menu(window)

    find = QLineEdit()
    find.setPlaceholderText("Find a process: pid, user, command (Ctrl+F)")
    find.setClearButtonEnabled(True)
    find.setMaximumWidth(320)
    find.textChanged.connect(lambda text: filter_processes(window, text))
    window.controls.toolbar.insertWidget(window.controls.toolbar.actions()[-1], find)
    window.find_field = find

    def focus_find() -> None:
        window.tabs.setCurrentIndex(0)
        find.setFocus()
        find.selectAll()

    actions = {
        "pause": window.controls.pause_action,
        "find": focus_find,
        "end_process": lambda: end_selected_process(window, window.services.panels),
        "settings": settings_action,
        "about": about_action,
        "quit": window.quit_action,
    }
    for key, act in window.controls.window_actions.items():
        actions[f"window_{key}"] = act
    window.shortcut_actions = install_shortcuts(window, actions)


def add_help_menu(window):
    """Help → About, Keyboard shortcuts (the live window and a reopened session's);
    returns the About action."""
    help_menu = window.menuBar().addMenu("&Help")
    about_action = help_menu.addAction("&About vramscope", lambda: open_about(window))
    help_menu.addAction("&Keyboard shortcuts", lambda: show_shortcuts(window))
    return about_action


def filter_processes(window, text: str) -> None:
    """Rows whose any column contains ``text`` (case-insensitive); empty shows all."""
    window.table.set_filter(text)


def open_settings(window, settings):
    from vramscope.ui.window.settings_dialog import SettingsDialog

    dialog = SettingsDialog(settings, window)
    dialog.applied.connect(lambda changed: apply_settings(window, settings, changed))
    dialog.open()
    window.settings_dialog = dialog
    return dialog


def apply_settings(window, settings, changed: set) -> None:
    """Take effect at once, without a restart."""
    services = window.services
    if "interval" in changed:
        window.feed.sampler.interval = settings.interval
        getattr(window.feed.source, "set_interval", lambda _s: None)(settings.interval)  # its sampler process
    if "window" in changed:
        window.set_window(settings.window)
    if "theme" in changed:
        theme.switch(QApplication.instance(), settings.theme)
    if "read_only" in changed:
        services.read_only = services.actions.read_only = settings.read_only
        services.panels.alerts.read_only = settings.read_only
        services.panels.agents.read_only = settings.read_only
        services.panels.alerts.refresh()
    if "diagnostics" in changed:
        services.engine.settings = settings.diagnostics
        getattr(window.feed.source, "set_thresholds", lambda _d: None)(
            settings.diagnostics
        )  # its sampler process
    if changed & {"recording", "session_cap_bytes"}:
        window.statusBar().showMessage("Recording settings apply from the next start.", 8000)


def open_about(window):
    from vramscope.ui.window.about import AboutDialog

    dialog = AboutDialog(window.store.latest, window)
    dialog.open()
    window.about_dialog = dialog
    return dialog


def show_shortcuts(window) -> None:
    rows = "".join(f"<tr><td><b>{k}</b></td><td>&nbsp;&nbsp;{t}</td></tr>" for k, t in table_rows())
    box = QMessageBox(window)
    box.setWindowTitle("Keyboard shortcuts")
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(f"<table>{rows}</table>")
    box.open()
    window.shortcuts_box = box
