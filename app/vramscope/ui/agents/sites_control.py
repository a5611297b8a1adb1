"""The agents tab's "Record allocation sites for N steps" (one per agent process).

The button asks the agent (sources/agents/agent_requests.py, on a worker thread: never a
socket on the GUI thread); what the recording does -- its progress and measured
overhead, then the top sites and the memory_viz pickle, which "Open the snapshot"
shows in the snapshot viewer (ui/snapshot/) -- arrives as SITES events
with everything else the monitor pulls, so a recording started by
``vramscope sites`` or ``VRAMSCOPE_SITES_STEPS`` shows here too. The button is
disabled, with the reason beside it, for a run without a CUDA device, an ended
run, a process on another machine (its agent's socket is there), the demo's
invented processes, and a window run read-only (it changes no other process).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget

from vramscope.agent.protocol import EventKind
from vramscope.core.units import fmt_bytes
from vramscope.ui.qt import theme
from vramscope.ui.qt.bridge import Bridge
from vramscope.ui.qt.safe_text import html_text

TOP = 5
CPU_ONLY = "not available: this run has no CUDA device (CPU-only PyTorch, or the model is on the CPU)"
DEMO = "not available in the demo: its processes are invented"
READ_ONLY = "not available: vramscope runs read-only (--read-only) and changes no other process"
NO_CHANNEL = "not available: this view was given no way to ask the agent"


def sites_refusal(report, frame, read_only: bool = False) -> str | None:
    """Why this window cannot ask ``report``'s agent to record sites (None: it can)."""
    if frame is not None and frame.simulated:
        return DEMO
    if read_only:
        return READ_ONLY
    hosts = frame.host_names if frame is not None else ()
    if hosts:  # the window watches other machines: the agent's socket is there
        host = next(
            (g.host for g in frame.gpus if g.host and any(p.pid == report.pid for p in g.processes)),
            None,
        )
        return (
            f"not available from here: the process runs on {host or 'another machine'} "
            f"(run `vramscope sites {report.pid}` there)"
        )
    return None


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


class SitesControl(QWidget):
    def __init__(self, pid: int, start=None, parent=None):
        """``start(pid, steps)`` asks the agent (the window's shell hands in
        sources/agents/agent_requests.py's ``start_sites``); None: this view cannot ask."""
        super().__init__(parent)
        self.pid = pid
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
        # the recording's snapshot, opened in the viewer (ui/snapshot/): only one on this machine
        self.open_snapshot = QPushButton("Open the snapshot")
        self.open_snapshot.setVisible(False)
        self.open_snapshot.clicked.connect(self._open_snapshot)
        outer.addWidget(self.open_snapshot, 0, Qt.AlignmentFlag.AlignLeft)
        self.snapshot_path: str | None = None
        self.viewer = None
        self._bridge = Bridge(self)  # the request runs on a worker, its reply comes back here
        self._asking = False
        self.error: str | None = None

    def update_from(self, report, refusal: str | None = None) -> None:
        """``refusal``: why this window cannot ask (sites_refusal), None when it can."""
        if refusal is None and self._start is None:
            refusal = NO_CHANNEL
        cuda = any(d.device.startswith("cuda") for d in report.devices)
        live = report.connected
        usable = cuda and live and refusal is None
        self.button.setEnabled(usable and not self._asking)
        self.steps.setEnabled(usable)
        if refusal is not None:
            self.reason.setText(refusal)
        elif not cuda:
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
        data = latest.data if latest is not None and isinstance(latest.data, dict) else {}
        path = data.get("snapshot_path") if data.get("state") == "done" and refusal is None else None
        self.snapshot_path = path if isinstance(path, str) and path else None
        self.open_snapshot.setVisible(self.snapshot_path is not None)
        text = sites_text(latest.data) if latest is not None else ""
        self.result.setVisible(bool(text))
        if text:
            self.result.setText(
                "<br>".join(
                    "&nbsp;" * (len(x) - len(x.lstrip(" "))) + html_text(x.lstrip(" "))
                    for x in text.splitlines()
                )
            )

    def _open_snapshot(self) -> None:
        from vramscope.ui.snapshot.window import open_snapshot_window

        if self.snapshot_path:
            self.viewer = open_snapshot_window(self.snapshot_path, self.window())

    def _clicked(self) -> None:
        self._asking = True
        self.error = None
        self.button.setEnabled(False)
        self.reason.setText("asking the agent…")
        pid, steps, start = self.pid, self.steps.value(), self._start
        self._bridge.run_in_thread(
            lambda: start(pid, steps),
            lambda reply, error: self._replied(
                reply if error is None else {"ok": False, "error": f"{type(error).__name__}: {error}"}
            ),
            name="vramscope-sites",
        )

    def _replied(self, reply: dict) -> None:
        self._asking = False
        self.button.setEnabled(True)
        self.error = None if reply.get("ok") else str(reply.get("error"))
        self.reason.setText(self.error or "recording: the progress shows below as it comes")
