"""A recording of allocation sites and an OOM's capture, opened in the snapshot viewer from
the agents tab."""

from __future__ import annotations

import pickle

from vramscope.agent.oom import oom
from vramscope.core.samples import AgentDevice, AgentEvent, AgentReport
from vramscope.core.snapshot.example import training_snapshot
from vramscope.ui.agents.sites_control import SitesControl


def _done(path):
    event = AgentEvent("sites", 12.0, {"state": "done", "steps": 3, "done_steps": 3, "snapshot_path": path})
    return AgentReport(
        pid=4242, start_time=1.0, devices=(AgentDevice(device="cuda:0"),), recent_events=(event,)
    )


def test_the_recordings_snapshot_opens_in_the_viewer(qtbot, tmp_path):
    snap = training_snapshot()
    path = oom.dump_snapshot(snap, pid=4242, directory=str(tmp_path), prefix="sites")  # as the agent saves it
    c = SitesControl(4242, start=lambda pid, steps: {"ok": True})
    qtbot.addWidget(c)
    c.show()
    c.update_from(_done(path))
    assert c.open_snapshot.isVisible()
    c.open_snapshot.click()
    qtbot.addWidget(c.viewer)
    qtbot.waitUntil(lambda: c.viewer.tl is not None, timeout=30_000)
    assert c.viewer.path == path and "OOM" in c.viewer.figures.text()
    with open(path, "rb") as f:
        assert pickle.load(f) == snap  # (the file is the agent's, untouched; our own test data)


def test_no_button_for_a_snapshot_on_another_machine(qtbot):
    c = SitesControl(4242, start=lambda pid, steps: {"ok": True})
    qtbot.addWidget(c)
    c.show()
    c.update_from(
        _done("/tmp/sites-1.pickle"), refusal="not available from here: the process runs on gpu-box"
    )
    assert not c.open_snapshot.isVisible()


def test_an_ooms_capture_opens_in_the_viewer(qtbot, tmp_path):
    from vramscope.ui.agents.oom_view import OPEN, OomView

    snap = training_snapshot()
    path = oom.dump_snapshot(snap, pid=4242, directory=str(tmp_path))  # as the agent saves it at an OOM
    view = OomView()
    qtbot.addWidget(view)
    data = {"device": "cuda:0", "requested": 6 << 30, "snapshot_path": path, "source": "observer"}
    view.show_event(AgentEvent("oom", 20.0, data), (), "cuda:0")
    assert "Open the OOM's snapshot" in view.text()
    view.linkActivated.emit(OPEN)  # what a click on the link does
    qtbot.addWidget(view.viewer)
    qtbot.waitUntil(lambda: view.viewer.tl is not None, timeout=30_000)
    assert view.viewer.path == path
    view.show_event(
        AgentEvent("oom", 21.0, {**data, "snapshot_path": str(tmp_path / "gone.pickle")}), (), "cuda:0"
    )
    assert "Open the OOM's snapshot" not in view.text()  # not on this machine: no link
