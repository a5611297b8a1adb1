"""Keyboard shortcuts on a plain window: each key runs its action, text
fields keep their keys, one key never has two owners."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLineEdit, QMainWindow, QVBoxLayout, QWidget

from vramscope.ui.window.shortcuts import BY_NAME, SHORTCUTS, install_shortcuts, table_rows

KEYS = {  # what a user presses -> the action's name
    (Qt.Key.Key_Space, Qt.KeyboardModifier.NoModifier): "pause",
    (Qt.Key.Key_1, Qt.KeyboardModifier.NoModifier): "window_1m",
    (Qt.Key.Key_2, Qt.KeyboardModifier.NoModifier): "window_10m",
    (Qt.Key.Key_3, Qt.KeyboardModifier.NoModifier): "window_1h",
    (Qt.Key.Key_4, Qt.KeyboardModifier.NoModifier): "window_all",
    (Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier): "find",
    (Qt.Key.Key_Delete, Qt.KeyboardModifier.NoModifier): "end_process",
    (Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier): "settings",
    (Qt.Key.Key_F1, Qt.KeyboardModifier.NoModifier): "about",
    (Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier): "quit",
}


@pytest.fixture
def window(qtbot):
    w = QMainWindow()
    central = QWidget()
    lay = QVBoxLayout(central)
    w.find_box = QLineEdit()
    w.other = QWidget()
    w.other.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    lay.addWidget(w.find_box)
    lay.addWidget(w.other)
    w.setCentralWidget(central)
    qtbot.addWidget(w)
    w.show()
    w.activateWindow()
    qtbot.waitExposed(w)
    w.other.setFocus()
    return w


def test_every_key_runs_its_action(window, qtbot):
    calls: list[str] = []
    install_shortcuts(window, {s.name: (lambda n=s.name: calls.append(n)) for s in SHORTCUTS})
    for (key, mods), name in KEYS.items():
        qtbot.keyClick(window.other, key, mods)
        assert calls[-1:] == [name], f"{QKeySequence(key | mods).toString()} should run {name}"
    assert len(calls) == len(KEYS) == len(SHORTCUTS)


def test_typing_in_a_text_field_is_not_a_shortcut(window, qtbot):
    calls: list[str] = []
    install_shortcuts(
        window,
        {
            "pause": lambda: calls.append("pause"),
            "window_1m": lambda: calls.append("1m"),
            "find": lambda: window.find_box.setFocus(),
        },
    )
    qtbot.keyClick(window.other, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.find_box.hasFocus()
    qtbot.keyClicks(window.find_box, "train 1")
    assert window.find_box.text() == "train 1"
    assert calls == []


def test_only_given_actions_are_installed(window, qtbot):
    calls = []
    actions = install_shortcuts(window, {"pause": lambda: calls.append("pause")})
    assert list(actions) == ["pause"]
    qtbot.keyClick(window.other, Qt.Key.Key_Delete)
    assert calls == []
    with pytest.raises(ValueError, match="no shortcut named explode"):
        install_shortcuts(window, {"explode": lambda: None})


def test_an_existing_menu_action_gets_the_key_and_no_key_has_two_owners(window, qtbot):
    calls = []
    menu = window.menuBar().addMenu("&File")
    quit_item = QAction("&Quit", window)
    quit_item.triggered.connect(lambda: calls.append("menu quit"))
    menu.addAction(quit_item)
    old_pause = QAction("Pause", window)
    old_pause.setShortcut(QKeySequence("Space"))
    old_pause.triggered.connect(lambda: calls.append("old pause"))
    window.addAction(old_pause)

    actions = install_shortcuts(window, {"quit": quit_item, "pause": lambda: calls.append("pause")})
    assert actions["quit"] is quit_item
    assert quit_item.shortcut() == QKeySequence("Ctrl+Q")  # the menu shows the key
    assert old_pause.shortcut().isEmpty()
    qtbot.keyClick(window.other, Qt.Key.Key_Space)
    qtbot.keyClick(window.other, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    assert calls == ["pause", "menu quit"]


def test_end_process_asks_before_anything_happens(window, qtbot):
    """Delete opens the confirmation (EndProcessDialog); only its button acts."""
    from vramscope.core.end_process.actions import ProcessSummary
    from vramscope.ui.end_process.end_process_dialog import EndProcessDialog

    ended = []
    summary = ProcessSummary(
        pid=4242,
        start_time=1.0,
        user="alice",
        command="python train.py",
        age_seconds=3600,
        memory=18 << 30,
        own=True,
        refusal=None,
        connection_file=None,
    )
    dialogs = []

    def end_selected():
        d = EndProcessDialog(summary, "term", window)
        d.accepted.connect(lambda: ended.append(summary.pid))
        dialogs.append(d)
        d.open()

    install_shortcuts(window, {"end_process": end_selected})
    qtbot.keyClick(window.other, Qt.Key.Key_Delete)
    assert len(dialogs) == 1 and dialogs[0].isVisible() and ended == []
    assert "python train.py" in dialogs[0].fields["Command"].text()
    dialogs[0].confirm_button.click()
    assert ended == [4242]


def test_help_table_lists_every_shortcut_with_its_keys():
    rows = dict((text, keys) for keys, text in table_rows())
    assert rows[BY_NAME["pause"].text] == "Space"
    assert rows[BY_NAME["settings"].text] == "Ctrl+,"
    assert len(rows) == len(SHORTCUTS)
