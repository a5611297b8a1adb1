"""What an alert says on screen: its severity's colour and dot, "since when",
the details pane's HTML (fix before evidence), the first sentence of its fix.

Alerts quote commands, hosts and agents' words: every text from them is
escaped (ui/qt/safe_text.py) before it goes into rich text.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap

from vramscope.core.detectors.alert import CRITICAL, INFO, WARNING, Alert
from vramscope.core.units import fmt_bytes, fmt_duration
from vramscope.ui.qt import theme
from vramscope.ui.qt.safe_text import html_text

WATCHING = "watching"  # the severity column of a condition on its way to an alert


def severity_colour(severity: str, s: theme.Scheme | None = None) -> str:
    """A severity's colour in scheme ``s`` (today's by default)."""
    s = s or theme.current()
    return {CRITICAL: s.ERROR, WARNING: s.WARNING, INFO: s.LINK}.get(severity, s.MUTED)


def severity_icon(severity: str, size: int = 12, s: theme.Scheme | None = None) -> QIcon:
    """A filled dot in the severity's colour; a hollow muted ring for "watching"."""
    pix = QPixmap(size, size)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    if severity == WATCHING:
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.setPen(QColor(severity_colour(severity, s)))
        p.drawEllipse(2, 2, size - 4, size - 4)
    else:
        p.setBrush(QColor(severity_colour(severity, s)))
        p.setPen(Qt.PenStyle.NoPen)
        p.drawEllipse(1, 1, size - 2, size - 2)
    p.end()
    return QIcon(pix)


def since_text(since: float | None, now: float) -> str:
    """ "14:02:11 (3 min ago)"; "n/a" without a start."""
    if since is None:
        return "n/a"
    clock = time.strftime("%H:%M:%S", time.localtime(since))
    return f"{clock} ({fmt_duration(now - since)} ago)"


def watch_html(watch, now: float, s: theme.Scheme | None = None) -> str:
    e = html_text  # the process and host names are strangers' text
    s = s or theme.current()
    return (
        f"<p><b style='color:{s.MUTED}'>WATCHING</b> <b>{e(watch.title)}</b> &mdash; "
        f"{e(watch.message)}</p>"
        f"<p style='color:{s.MUTED}'>since {e(since_text(watch.since, now))}; "
        f"{e(watch.becomes)} if nothing changes. Nothing to do yet.</p>"
    )


def alert_html(
    alert: Alert, now: float, hidden_note: str | None = None, s: theme.Scheme | None = None
) -> str:
    e = html_text  # alerts quote commands, hosts and agents' words
    s = s or theme.current()
    parts = [
        f"<p><b style='color:{severity_colour(alert.severity, s)}'>"
        f"{e(alert.severity.upper())}</b> "
        f"<b>{e(alert.title)}</b> &mdash; {e(alert.message)}</p>",
        f"<p style='color:{s.MUTED}'>since {e(since_text(alert.since, now))}"
        + (f"; {e(alert.gpu_label)}" if alert.gpu_label is not None else "")
        + (f"; pid {alert.pid}" if alert.pid is not None else "")
        + (f"; would free {e(fmt_bytes(alert.frees))}" if alert.frees else "")
        + (f"; {e(hidden_note)}" if hidden_note else "")
        + "</p>",
    ]
    # what to do before why: on a 1,024 x 700 window the fix is in view without scrolling
    if alert.fix:
        parts.append(f"<p><b>Fix</b><br>{e(alert.fix)}</p>")
    if alert.evidence:
        parts.append(
            "<p><b>Evidence</b></p><ul>" + "".join(f"<li>{e(line)}</li>" for line in alert.evidence) + "</ul>"
        )
    if alert.connection_file:
        parts.append(
            f"<p><b>Jupyter</b>: shut it down from Jupyter instead; connection file "
            f"<code>{e(alert.connection_file)}</code></p>"
        )
    return "".join(parts)


def first_sentence(text: str) -> str:
    """The list's Fix column: the fix up to its first stop (within 140 characters)."""
    if not text:
        return ""
    for stop in (". ", ": "):
        i = text.find(stop)
        if 0 < i < 140:
            return text[: i + 1]
    return text[:140] + ("\u2026" if len(text) > 140 else "")
