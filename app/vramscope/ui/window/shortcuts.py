"""Keyboard shortcuts, as data, and one function that installs them on a window.

    actions = install_shortcuts(window, {
        "pause": lambda: window.set_paused(not window.paused),
        "window_1m": lambda: window.set_window("1m"), ...
        "find": window.table.focus_filter,
        "end_process": alerts_panel.buttons.end_selected,   # opens EndProcessDialog (confirmation)
        "settings": open_settings, "quit": window.close,
    })

A value may also be an existing QAction (a menu item): it gets the key, so
the menu shows it, and no second action is made. Only names given a value
get a QAction (so a window without, say, an
end-process action simply has no Delete shortcut). The actions work anywhere
in the window (Qt.WindowShortcut); a text field with the focus keeps its keys
(typing "1" or Space in the find box types them). A key already bound to
another action of the window is taken from it -- two actions on one key make
Qt fire neither -- so this table is the one place keys are decided.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Shortcut:
    name: str
    keys: str  # QKeySequence portable text
    text: str  # what the action does (menu text, help table)


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("pause", "Space", "Pause / resume the view (sampling continues)"),
    Shortcut("window_1m", "1", "Time window: 1 min"),
    Shortcut("window_10m", "2", "Time window: 10 min"),
    Shortcut("window_1h", "3", "Time window: 1 h"),
    Shortcut("window_all", "4", "Time window: the whole session"),
    Shortcut("find", "Ctrl+F", "Find a process"),
    Shortcut("end_process", "Delete", "End the selected process (asks first)"),
    Shortcut("settings", "Ctrl+,", "Settings"),
    Shortcut("about", "F1", "About vramscope (versions)"),
    Shortcut("quit", "Ctrl+Q", "Quit"),
)
BY_NAME = {s.name: s for s in SHORTCUTS}


def key_text(shortcut: Shortcut) -> str:
    """The keys as this desktop writes them ("Ctrl+," / "Space")."""
    return QKeySequence(shortcut.keys).toString(QKeySequence.SequenceFormat.NativeText)


def table_rows() -> list[tuple[str, str]]:
    """(keys, what it does) for a help page."""
    return [(key_text(s), s.text) for s in SHORTCUTS]


def install_shortcuts(window, actions: dict[str, Callable[[], object] | QAction]) -> dict[str, QAction]:
    """A QAction per named callable (or the given QAction), with its key, in
    ``window``; returns them by name."""
    unknown = sorted(set(actions) - set(BY_NAME))
    if unknown:
        raise ValueError(f"no shortcut named {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    installed: dict[str, QAction] = {}
    for shortcut in SHORTCUTS:
        callback = actions.get(shortcut.name)
        if callback is None:
            continue
        seq = QKeySequence(shortcut.keys)
        _release_key(window, seq)
        if isinstance(callback, QAction):
            callback.setShortcut(seq)
            callback.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            if callback not in window.actions():
                window.addAction(callback)  # a menu item's key works with the menu closed
            installed[shortcut.name] = callback
            continue
        action = QAction(shortcut.text, window)
        action.setObjectName(f"shortcut-{shortcut.name}")
        action.setShortcut(seq)
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(lambda _checked=False, cb=callback: cb())
        window.addAction(action)
        installed[shortcut.name] = action
    return installed


def _release_key(window, seq: QKeySequence) -> None:
    for other in window.findChildren(QAction):
        keys = other.shortcuts()
        if seq in keys:
            log.debug("shortcut %s moves from %r to the shortcut table", seq.toString(), other.text())
            other.setShortcuts([k for k in keys if k != seq])
