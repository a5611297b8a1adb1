"""Strangers' text (command lines, GPU names, hosts, remote errors) in Qt widgets.

Qt decides per string whether a label or tooltip is rich text
(``Qt::mightBeRichText``, https://doc.qt.io/qt-6/qt.html#mightBeRichText):
a process named ``<img src=...>`` or ``<a href=...>`` would be rendered as
HTML. ``tip`` gives a tooltip that is always shown as the text it is;
``plain`` makes a label plain text. Both first escape control and bidi
characters (core/status/terminal_text.py), as on a terminal.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import QLabel

from vramscope.core.status.terminal_text import visible, visible_lines


def tip(text: str | None) -> str:
    """A tooltip showing ``text`` as written (newlines kept)."""
    if not text:
        return ""
    text = visible_lines(text)
    if GuiQt.mightBeRichText(text):
        return '<p style="white-space:pre-wrap">' + html.escape(text).replace("\n", "<br>") + "</p>"
    return text


def html_text(text: str) -> str:
    """``text`` inside HTML that Qt renders (a legend, a details pane): escaped."""
    return html.escape(visible(text), quote=False)


def plain(label: QLabel, text: str | None = None) -> QLabel:
    """``label`` as plain text (never HTML), with ``text`` set escaped when given."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    if text is not None:
        label.setText(visible(text))
    return label
