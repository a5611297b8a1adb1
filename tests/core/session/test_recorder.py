"""The window's recording: only real GPUs, the file appears with the first one,
alerts and actions beside the samples."""

from __future__ import annotations

import pytest
import dataclasses

from vramscope.core.detectors import Diagnostics
from vramscope.core.session import open_session
from vramscope.core.session.recorder import SessionRecorder
from vramscope.core.samples import Frame

from .helpers import frame


def _real(k):
    return dataclasses.replace(frame(k), simulated=False)


def test_no_file_until_a_real_gpu_and_never_simulated_frames(tmp_path):
    rec = SessionRecorder(directory=tmp_path)
    rec(Frame(time=1.0, error="NVIDIA driver not found"))  # no driver: nothing to record
    rec(frame(0))  # the demo: simulated
    assert rec.path is None and list(tmp_path.iterdir()) == []
    for k in range(1, 6):
        rec(_real(k))
    rec(frame(6))  # switched to the demo: not mixed into the real recording
    rec.close()
    reader = open_session(rec.path)
    assert list(reader.frame_times()) == [frame(k).time for k in range(1, 6)]


def test_alerts_and_actions_are_journaled(tmp_path):
    class OneAlert(Diagnostics):
        def alerts(self, include_hidden=False):
            from vramscope.core.detectors.alert import WARNING, Alert

            return [
                Alert(
                    kind="leak",
                    severity=WARNING,
                    gpu=0,
                    pid=4242,
                    start_time=None,
                    since=frame(2).time,
                    message="leak: 4 MiB per step",
                )
            ]

    class Actions:
        observers: list = []

    actions = Actions()
    rec = SessionRecorder(engine=OneAlert(), actions=actions, directory=tmp_path)
    for k in range(4):
        rec(_real(k))
    for observer in actions.observers:
        observer(
            {
                "time": frame(3).time,
                "action": "SIGTERM",
                "outcome": "sent",
                "pid": 4242,
                "start_time": None,
                "message": "sent SIGTERM to pid 4242",
            }
        )
    rec.close()
    reader = open_session(rec.path)
    assert [a["kind"] for a in reader.recorded.alerts()] == ["leak"]  # once, not once per frame
    assert [a["action"] for a in reader.recorded.actions()] == ["SIGTERM"]


@pytest.mark.slow
def test_headless_record_keeps_the_alerts_it_raised(tmp_path):
    """`vramscope record` runs the window's diagnostics: an OOM the agent reports
    becomes a critical alert, kept in the session beside the samples."""
    import threading

    from vramscope.commands.record import record_session

    class OomOnThirdPass:
        name, simulated = "test", False

        def __init__(self):
            self.k = 0

        def sample(self, now):
            self.k += 1
            f = frame(self.k, oom=self.k == 3)
            shift = now - f.time  # the helper's frames are from 2023: move them to now
            agents = tuple(
                dataclasses.replace(
                    r,
                    time=r.time + shift,
                    events=tuple(dataclasses.replace(e, time=e.time + shift) for e in r.events),
                )
                for r in f.agents
            )
            return dataclasses.replace(f, time=now, simulated=False, agents=agents)

        def close(self):
            pass

    path = tmp_path / "run.vramscope"
    stop = threading.Event()
    threading.Timer(2.0, stop.set).start()
    assert record_session(OomOnThirdPass(), path, interval=0.2, stop=stop) == 0
    alerts = open_session(path).recorded.alerts()
    assert ("oom", "critical") in [(a["kind"], a["severity"]) for a in alerts]
