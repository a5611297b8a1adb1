"""The agents tab's "Record allocation sites" control: disabled with its reason on a
CPU run, asks the agent off the GUI thread, shows the progress and the top sites."""

from __future__ import annotations

import threading

from vramscope.core.samples import AgentDevice, AgentEvent, AgentReport
from vramscope.ui.agents.sites_control import CPU_ONLY, NO_CHANNEL, SitesControl

MiB = 1 << 20


def _report(device="cuda:0", events=()):
    return AgentReport(
        pid=4242, start_time=1.0, devices=(AgentDevice(device=device),), recent_events=tuple(events)
    )


def test_cpu_only_run_disables_the_button_and_says_why(qtbot):
    c = SitesControl(4242, start=lambda pid, steps: {"ok": True})
    qtbot.addWidget(c)
    c.update_from(_report("cpu"))
    assert not c.button.isEnabled() and c.reason.text() == CPU_ONLY


def test_the_button_asks_the_agent_off_the_gui_thread_and_shows_a_refusal(qtbot):
    asked = []

    def start(pid, steps):
        asked.append((pid, steps, threading.current_thread() is threading.main_thread()))
        return {"ok": False, "error": "not started: memory history is already being recorded"}

    c = SitesControl(4242, start=start)
    qtbot.addWidget(c)
    c.update_from(_report())
    c.steps.setValue(5)
    assert c.button.isEnabled()
    c.button.click()
    qtbot.waitUntil(lambda: c.error is not None, timeout=5000)
    assert asked == [(4242, 5, False)]
    assert c.reason.text().startswith("not started: memory history")


def test_progress_then_the_top_sites_come_from_the_agents_events(qtbot):
    c = SitesControl(4242, start=lambda pid, steps: {"ok": True})
    qtbot.addWidget(c)
    c.show()
    progress = AgentEvent(
        "sites",
        10.0,
        {"state": "recording", "steps": 3, "done_steps": 1, "overhead": 0.04, "us_per_alloc": 1.2},
    )
    c.update_from(_report(events=[progress]))
    assert "step 1 of 3 · overhead +4.0% step time, 1.20 µs per allocation" in c.result.text()
    done = AgentEvent(
        "sites",
        12.0,
        {
            "state": "done",
            "steps": 3,
            "done_steps": 3,
            "overhead": 0.05,
            "us_per_alloc": None,
            "snapshot_path": "/tmp/sites-1.pickle",
            "devices": {
                "cuda:0": {
                    "peak_bytes": 220 * MiB,
                    "sites": [{"site": "train.py:88 in forward", "bytes": 190 * MiB, "count": 3}],
                }
            },
        },
    )
    c.update_from(_report(events=[progress, done]))
    text = c.result.text()
    assert "cuda:0, 220.0 MiB alive at the peak" in text
    assert "190.0 MiB (3×) train.py:88 in forward" in text and "/tmp/sites-1.pickle" in text


def test_a_window_that_cannot_reach_the_agent_says_why_and_asks_nothing(qtbot):
    from vramscope.core.samples import Frame, GpuProcess, GpuSample
    from vramscope.ui.agents.sites_control import DEMO, READ_ONLY, sites_refusal

    asked = []
    c = SitesControl(4242, start=lambda pid, steps: asked.append(pid) or {"ok": True})
    qtbot.addWidget(c)
    report = _report()
    here = Frame(time=1.0, gpus=(GpuSample(index=0, processes=(GpuProcess(pid=4242, used=MiB),)),))
    remote = Frame(
        time=1.0, gpus=(GpuSample(index=0, host="lab2", processes=(GpuProcess(pid=4242, used=MiB),)),)
    )
    demo = Frame(time=1.0, gpus=here.gpus, simulated=True)
    assert sites_refusal(report, here) is None
    assert sites_refusal(report, here, read_only=True) == READ_ONLY
    assert sites_refusal(report, demo) == DEMO
    why = sites_refusal(report, remote)
    assert "runs on lab2" in why and "vramscope sites 4242" in why  # a PID of another machine
    for frame, read_only in ((remote, False), (demo, False), (here, True)):
        c.update_from(report, sites_refusal(report, frame, read_only))
        assert not c.button.isEnabled() and c.reason.text().startswith("not available")
        c.button.click()  # (disabled: nothing is asked)
    assert asked == []
    c.update_from(report, sites_refusal(report, here))
    assert c.button.isEnabled()


def test_a_view_given_no_way_to_ask_says_so(qtbot):
    # the view reads no source: the window's shell hands it the request (ui/window/panels.py;
    # tests/user_path/test_window_cuda_run.py checks the real window's agents tab has it)
    c = SitesControl(4242)
    qtbot.addWidget(c)
    c.update_from(_report())
    assert not c.button.isEnabled() and c.reason.text() == NO_CHANNEL
