"""Ending one process from the window, step by step: check it anew, confirm,
SIGTERM, look again after the grace period, offer SIGKILL if it survived. Every
call to the actions may be an ssh round trip (sources/remote/hosts.py HostActions) or
a /proc walk, so each runs on a worker and the next step starts from its
answer on the GUI thread (ui/qt/bridge.py); the window never waits on one."""

from __future__ import annotations

from PySide6.QtCore import QTimer

from vramscope.core.end_process.actions import EndProcess
from vramscope.ui.end_process.end_process_dialog import EndProcessDialog

KILL_CHECK_MS = 500  # how soon after SIGKILL the process is looked at again


class EndProcessFlow:
    """``say(text)`` reports each step; ``opened(dialog)`` gets each confirmation
    as it opens; ``ended(pid, start_time)`` once the process is gone."""

    def __init__(self, owner, bridge, say, opened, ended):
        self.owner = owner  # the dialogs' parent, and the timers' context
        self.bridge = bridge
        self.say = say
        self.opened = opened
        self.ended = ended

    def start(self, actions, pid: int, start_time: float | None, memory=None, grace_seconds=None) -> None:
        request = EndProcess(actions, pid, start_time, memory=memory, grace_seconds=grace_seconds)
        self.say(f"Checking pid {pid}...")
        self._in_worker(request.describe, lambda summary: self._confirm(request, summary, "term"))

    def _in_worker(self, work, done) -> None:
        def finished(result, error):
            if error is not None:
                self.say(f"Could not reach the process: {type(error).__name__}: {error}")
            else:
                done(result)

        self.bridge.run_in_thread(work, finished, name="vramscope-end-process")

    def _confirm(self, request: EndProcess, summary, mode: str) -> None:
        dialog = EndProcessDialog(summary, mode, self.owner)
        signal = request.terminate if mode == "term" else request.kill
        grace = mode == "term"
        dialog.accepted.connect(
            lambda: self._in_worker(signal, lambda result: self._signalled(request, result, grace))
        )
        dialog.open()
        self.opened(dialog)

    def _signalled(self, request: EndProcess, result, grace: bool) -> None:
        self.say(result.message)
        if result.ok:
            QTimer.singleShot(
                request.check_after_ms if grace else KILL_CHECK_MS,
                self.owner,
                lambda: self._look_again(request, offer_kill=grace),
            )

    def _look_again(self, request: EndProcess, offer_kill: bool) -> None:
        """After SIGTERM's grace period (or SIGKILL): gone, or (after SIGTERM) offer SIGKILL."""

        def work():
            if not request.running():
                return None
            return request.describe() if offer_kill else False

        def done(summary):
            if summary is None:
                self.say(request.ended_text)
                self.ended(request.pid, request.start_time)
            elif summary is not False:
                self._confirm(request, summary, "kill")

        self._in_worker(work, done)
