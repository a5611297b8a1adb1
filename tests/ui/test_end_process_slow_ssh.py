"""Ending a process on another machine over a slow ssh leaves the window responsive:
every round trip (describe, SIGTERM, is it gone) runs on a worker, so the event loop
never waits on one (it used to: about 10 s of ssh on the GUI thread)."""

from __future__ import annotations

import pytest
import threading
import time

from PySide6.QtCore import QTimer

from vramscope.core.detectors.alert import INFO, Alert, AlertKind
from vramscope.sources.remote.hosts import HostActions
from vramscope.ui.alerts.alerts_panel import AlertsPanel

ROUND_TRIP = 0.8  # seconds each request takes (a slow link; ServerAliveInterval is 10 s)
PID, START = 4242, 1_700_000_000.0


class SlowHost:
    """A watched host whose `vramscope stream` answers like the real one, slowly."""

    host = "lab-slow"

    def __init__(self):
        self.alive = True
        self.calls: list[tuple[str, str]] = []  # (op, thread name)

    def request(self, op, pid, start_time, *rest):
        self.calls.append((op, threading.current_thread().name))
        time.sleep(ROUND_TRIP)
        if op == "describe":
            return {
                "pid": pid,
                "start_time": start_time,
                "user": "alice",
                "command": "python train.py",
                "age_seconds": 3600.0,
                "memory": 8 << 30,
                "own": True,
                "refusal": None,
                "connection_file": None,
                "host": None,
            }
        if op == "terminate":
            self.alive = False
            return {"ok": True, "message": f"sent SIGTERM to pid {pid}", "connection_file": None}
        if op == "is_alive":
            return self.alive
        raise AssertionError(op)


class OneHost:
    def __init__(self, host):
        self.host = host

    def host_of(self, pid, start_time):
        return self.host if (pid, start_time) == (PID, START) else None


@pytest.mark.slow
def test_ending_a_process_over_slow_ssh_never_blocks_the_event_loop(qapp, qtbot, tmp_path):
    host = SlowHost()
    actions = HostActions(OneHost(host), audit_path=tmp_path / "audit.jsonl", grace_seconds=0.2)
    panel = AlertsPanel(actions=actions)
    qtbot.addWidget(panel)
    panel.show()
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(10)
    alert = Alert(
        kind=AlertKind.USER_REQUEST,
        severity=INFO,
        gpu=0,
        pid=PID,
        start_time=START,
        since=None,
        message="End python train.py on lab-slow GPU 0",
        frees=8 << 30,
    )
    began = time.monotonic()
    with qtbot.waitSignal(panel.dialog_opened, timeout=5000) as opened:
        assert panel.request_end(alert)
    dialog = opened.args[0]
    assert (
        dialog.windowTitle() == "End process on lab-slow"
        and dialog.fields["Command"].text() == "python train.py"
    )
    with qtbot.waitSignal(panel.process_ended, timeout=10000) as ended:
        dialog.confirm_button.click()
    took = time.monotonic() - began
    timer.stop()
    assert ended.args[0] == PID and panel.status.text().startswith(f"pid {PID} has exited")
    assert [op for op, _ in host.calls] == ["describe", "terminate", "is_alive"]
    assert all(name != threading.main_thread().name for _, name in host.calls)  # none on the GUI thread
    assert took >= 3 * ROUND_TRIP  # the round trips really were slow
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert max(gaps) < 0.25, f"the event loop stalled {max(gaps):.2f} s"
