"""The confirmation before vramscope signals a process: what it is, checked anew.

Opened by the alerts panel and the table (Delete, right-click) with ``open()``
(window-modal, not blocking). Cancel is the default button, so Enter never
ends a process.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout
from vramscope.ui.qt.safe_text import plain

from vramscope.core.units import fmt_bytes, fmt_duration
from vramscope.ui.qt import theme


class EndProcessDialog(QDialog):
    """Confirmation before a signal: command, user, age and memory, checked anew.

    ``mode`` is "term" (SIGTERM) or "kill" (SIGKILL after the grace period).
    A summary with a ``refusal`` shows why, with no button that acts.
    """

    def __init__(self, summary, mode: str = "term", parent=None):
        super().__init__(parent)
        self.summary = summary
        self.mode = mode
        on = f" on {summary.host}" if summary.host else ""  # another machine's (--host)
        self.setWindowTitle(("Force kill process" if mode == "kill" else "End process") + on)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        layout = QVBoxLayout(self)
        if mode == "kill":
            head = (
                f"pid {summary.pid}{on} is still running after SIGTERM. Send SIGKILL? "
                "It cannot clean up; unsaved work is lost."
            )
        else:
            head = f"End pid {summary.pid}{on}? It gets SIGTERM and can exit cleanly."
        self.headline = plain(QLabel(), head)  # a remote host's name is input
        self.headline.setWordWrap(True)
        layout.addWidget(self.headline)
        form = QFormLayout()
        self.fields: dict[str, QLabel] = {}
        for name, value in (
            ("Command", summary.command or "n/a"),
            ("User", summary.user or "n/a"),
            ("Age", fmt_duration(summary.age_seconds)),
            ("Memory", fmt_bytes(summary.memory)),
            ("PID", str(summary.pid)),
            *((("Host", summary.host),) if summary.host else ()),
        ):
            label = plain(QLabel(), value)  # another user's command line: never HTML
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.fields[name] = label
            form.addRow(name, label)
        layout.addLayout(form)
        self.jupyter = None
        if summary.connection_file:
            self.jupyter = plain(
                QLabel(),
                "This is a Jupyter kernel. Shutting it down from "
                "Jupyter (Kernel > Shut Down in its notebook) lets the notebook "
                "know. Connection file: " + summary.connection_file,
            )
            self.jupyter.setWordWrap(True)
            self.jupyter.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(self.jupyter)
        self.scheduler = None
        if summary.scheduler:  # a Slurm job's process: which job, and scancel to run oneself
            self.scheduler = plain(QLabel(), summary.scheduler)
            self.scheduler.setWordWrap(True)
            self.scheduler.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(self.scheduler)
        self.refusal = None
        buttons = QDialogButtonBox()
        if summary.refusal:
            self.refusal = plain(QLabel(), f"Cannot end it: {summary.refusal}")
            self.refusal.setWordWrap(True)
            theme.styled(self.refusal, lambda s: f"color: {s.ERROR};")
            layout.addWidget(self.refusal)
            self.confirm_button = None
            buttons.addButton(QDialogButtonBox.StandardButton.Close)
            buttons.rejected.connect(self.reject)
        else:
            text = "Force kill (SIGKILL)" if mode == "kill" else "End process (SIGTERM)"
            self.confirm_button = buttons.addButton(text, QDialogButtonBox.ButtonRole.AcceptRole)
            self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
            # Enter must not end a process: Cancel is the default and has the focus
            self.confirm_button.setAutoDefault(False)
            self.confirm_button.setDefault(False)
            self.cancel_button.setDefault(True)
            self.cancel_button.setFocus()
            buttons.accepted.connect(self.accept)
            buttons.rejected.connect(self.reject)
        self.copy_button = None
        if summary.connection_file:
            self.copy_button = buttons.addButton(
                "Copy connection file", QDialogButtonBox.ButtonRole.ActionRole
            )
            self.copy_button.clicked.connect(
                lambda: QGuiApplication.clipboard().setText(summary.connection_file)
            )
        self.copy_cancel_button = None
        if summary.cancel_command:
            self.copy_cancel_button = buttons.addButton(
                f"Copy `{summary.cancel_command}`", QDialogButtonBox.ButtonRole.ActionRole
            )
            self.copy_cancel_button.clicked.connect(
                lambda: QGuiApplication.clipboard().setText(summary.cancel_command)
            )
        layout.addWidget(buttons)
        self.buttons = buttons
        self.setMinimumWidth(460)
