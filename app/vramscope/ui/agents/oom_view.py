"""The OOM post-mortem in the agents tab: the report's dozen lines under the OOM line.

Built from the OOM event's data by the same code that prints it on the training
process's stderr (agent/oom/oom_report.py), with what the monitor saw on the GPU
(core/agent_figures/oom_context.py). The full report: ``vramscope export --format oom-report``.
Where the agent saved the snapshot at the OOM (memory history on) and the file is
on this machine, a link opens it in the snapshot viewer (ui/snapshot/).
"""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel

from vramscope.agent.oom import oom_text
from vramscope.core.agent_figures import oom_context
from vramscope.ui.qt import theme
from vramscope.ui.qt.safe_text import html_text


def more_text(session: str | None) -> str:
    """Where the full report is: the session this window records (or reopened), else
    how to record one (the demo, a window run with --no-record)."""
    if session:
        return f"full report: vramscope export {session} --format oom-report"
    return "full report: record the run (vramscope record), then vramscope export SESSION --format oom-report"


def _no_session() -> str | None:
    return None


OPEN = "vramscope:open-snapshot"  # the link to the OOM's snapshot (a capture on this machine)


def _indented(line: str) -> str:
    """A report line as HTML: its indent kept, the rest free to wrap on a narrow window."""
    body = line.lstrip(" ")
    return "&nbsp;" * (len(line) - len(body)) + html_text(body)


class OomView(QLabel):
    """A monospace block; hidden until the device has an OOM."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.setOpenExternalLinks(False)
        self.linkActivated.connect(self._open_snapshot)
        self.snapshot_path: str | None = None  # the OOM's capture, where it is on this machine
        self.viewer = None
        self.setWordWrap(True)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        theme.styled(self, lambda s: f"OomView {{ border-left: 3px solid {s.ERROR}; padding-left: 6px; }}")
        self.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.setVisible(False)
        self.report: dict | None = None
        self._shown_for = None
        self._shown = None  # (event, modules, device): drawn again in a new theme
        self.session = _no_session  # -> the session file this window records, or None
        theme.follow(self, self._recolour)

    def _recolour(self, _scheme) -> None:
        if self._shown is not None:
            self._shown_for = None
            self.show_event(*self._shown)

    def show_event(self, event, modules=(), device: str | None = None) -> None:
        """The post-mortem of ``event`` (an AgentEvent of kind "oom"); None hides it.
        ``modules``: the report's per-module figures (ModuleFigures) -- those measured on
        ``device`` name the largest modules and the checkpointing fix."""
        if event is None:
            self.setVisible(False)
            return
        self.setVisible(True)
        self._shown = (event, modules, device)
        mine = [m for m in modules if m.device in (device, None)]
        step = mine[0].measured_step if mine else None
        key = (event.time, id(event.data), len(event.data), step, len(mine))
        if key == self._shown_for:
            return
        self._shown_for = key
        self.report = oom_context.report_of(event.data, oom_context.module_dicts(mine, device))
        lines = oom_text.lines(self.report)[1:]  # (the OOM line above says what and when)
        s = theme.current()
        body = "<br>".join(_indented(line) for line in lines)
        path = event.data.get("snapshot_path")
        self.snapshot_path = path if isinstance(path, str) and path and os.path.isfile(path) else None
        link = (
            f"<br><a href='{OPEN}' style='color:{s.LINK}'>Open the OOM's snapshot</a>"
            if self.snapshot_path
            else ""
        )
        more = html_text(more_text(self.session()))
        self.setText(f"<b>OOM post-mortem</b><br>{body}<br><span style='color:{s.MUTED}'>{more}</span>{link}")

    def _open_snapshot(self, href: str) -> None:
        """The capture in the snapshot viewer (ui/snapshot/)."""
        from vramscope.ui.snapshot.window import open_snapshot_window

        if href == OPEN and self.snapshot_path:
            self.viewer = open_snapshot_window(self.snapshot_path, self.window())
