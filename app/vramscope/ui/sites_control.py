"""The agents tab's "Record allocation sites for N steps" (one per agent process).

The button asks the agent (sources/agent_requests.py, on a worker thread: never a
socket on the GUI thread); what the recording does -- its progress and measured
overhead, then the top sites and the memory_viz pickle -- arrives as SITES events
with everything else the monitor pulls, so a recording started by
``vramscope sites`` or ``VRAMSCOPE_SITES_STEPS`` shows here too. A run without a
CUDA device gets the button disabled with the reason beside it.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget

from vramscope.agent.protocol import EventKind
from vramscope.core.units import fmt_bytes
from vramscope.ui import theme
from vramscope.ui.safe_text import html_text

TOP = 5
CPU_ONLY = "not available: this run has no CUDA device (CPU-only PyTorch, or the model is on the CPU)"


def sites_text(d: dict) -> str:
    """A SITES event's data in words (plain text, one or a few lines)."""
    state = d.get("state")
    ov, per = d.get("overhead"), d.get("us_per_alloc")
    cost = (
        f"overhead {ov:+.1%} step time" + (f", {per:.2f} µs per allocation" if per is not None else "")
        if ov is not None
        else "overhead: measuring"
    )
    if state == "recording":
        return f"recording allocation sites: step {d.get('done_steps', 0)} of {d.get('steps')} · {cost}"
    if state == "failed":
        return f"allocation sites: {d.get('why')}"
    if state != "done":
        return ""
    lines = [f"allocation sites over {d.get('done_steps')} steps · {cost}"]
    for device, dev in (d.get("devices") or {}).items():
        if not isinstance(dev, dict):
            continue
        lines.append(f"{device}, {fmt_bytes(dev.get('peak_bytes'))} alive at the peak:")
        for s in (dev.get("sites") or [])[:TOP]:
            lines.append(f"  {fmt_bytes(s.get('bytes'))} ({s.get('count')}×) {s.get('site')}")
        if dev.get("why"):
            lines.append(f"  note: {dev['why']}")
    if d.get("snapshot_path"):
        lines.append(f"memory_viz pickle: {d['snapshot_path']}")
    return "\n".join(lines)


class _Replies(QObject):
    replied = Signal(dict)


class SitesControl(QWidget):
    def __init__(self, pid: int, start=None, parent=None):
        super().__init__(parent)
        self.pid = pid
        if start is None:
            from vramscope.sources.agent_requests import start_sites as start
        self._start = start
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.button = QPushButton("Record allocation sites")
        self.button.clicked.connect(self._clicked)
        self.steps = QSpinBox()
        self.steps.setRange(1, 1000)
        self.steps.setValue(3)
        self.steps.setSuffix(" steps")
        self.reason = QLabel()
        theme.styled(self.reason, lambda s: f"color: {s.MUTED};")
        for w in (self.button, QLabel("for"), self.steps, self.reason):
            row.addWidget(w)
        row.addStretch(1)
        outer.addLayout(row)
        self.result = QLabel()
        self.result.setTextFormat(Qt.TextFormat.RichText)
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result.setVisible(False)
        outer.addWidget(self.result)
        self._replies = _Replies()
        self._replies.replied.connect(self._replied)
        self._asking = False
        self.error: str | None = None

    def update_from(self, report) -> None:
        cuda = any(d.device.startswith("cuda") for d in report.devices)
        live = report.connected
        self.button.setEnabled(cuda and live and not self._asking)
        self.steps.setEnabled(cuda and live)
        if not cuda:
            self.reason.setText(CPU_ONLY)
        elif not live:
            self.reason.setText("the run has ended")
        elif self.error:
            self.reason.setText(self.error)
        else:
            self.reason.setText("PyTorch's memory history, Python frames, then off again")
        latest = None
        for e in tuple(report.recent_events) + tuple(report.events):
            if e.kind == EventKind.SITES and (latest is None or e.time >= latest.time):
                latest = e
        text = sites_text(latest.data) if latest is not None else ""
        self.result.setVisible(bool(text))
        if text:
            self.result.setText(
                "<br>".join(
                    "&nbsp;" * (len(x) - len(x.lstrip(" "))) + html_text(x.lstrip(" "))
                    for x in text.splitlines()
                )
            )

    def _clicked(self) -> None:
        self._asking = True
        self.error = None
        self.button.setEnabled(False)
        self.reason.setText("asking the agent…")
        pid, steps, start, replies = self.pid, self.steps.value(), self._start, self._replies
        threading.Thread(
            target=lambda: replies.replied.emit(start(pid, steps)), name="vramscope-sites", daemon=True
        ).start()

    def _replied(self, reply: dict) -> None:
        self._asking = False
        self.button.setEnabled(True)
        self.error = None if reply.get("ok") else str(reply.get("error"))
        self.reason.setText(self.error or "recording: the progress shows below as it comes")
