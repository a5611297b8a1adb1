"""The window over several hosts (--host a --host b) through the stand-in ssh:
cards grouped by host with the host in their titles, a Host column, a chip
per host, the hosts in the window title and the end-process confirmation, a
dropped host marked while the other goes on; a recording of them reopened
names its hosts as the live window did."""

from __future__ import annotations

import argparse
import os
import signal
import time

import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from ui.helpers import open_every_group

pytest.importorskip("PySide6")

from vramscope.sources.remote.hosts import HOST_BLOCK  # noqa: E402


@pytest.fixture
def themed(qapp):
    from vramscope.ui.qt import theme

    theme.apply(qapp)
    return qapp


def refresh_until(window, qtbot, predicate, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        window.refresh(force=True)
        if predicate():
            return
        qtbot.wait(100)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_window_watches_two_hosts_and_marks_the_one_that_drops(themed, qtbot, hosts, sleepers, artifacts_dir):
    from vramscope.ui.window.app import build_window
    from vramscope.ui.window.panels import end_selected_process
    from vramscope.ui.processes.process_model import COL

    pid_a, pid_b = sleepers(2)
    hosts.add(
        "lab-a",
        FakeState(
            gpus=[
                FakeGpu(
                    name="NVIDIA RTX A6000",
                    total=48 * GiB,
                    used=30 * GiB,
                    processes=[FakeProcess(pid_a, 29 * GiB, sm=80)],
                ),
                FakeGpu(name="NVIDIA RTX A6000", total=48 * GiB, used=2 * GiB),
            ]
        ),
    )
    hosts.add(
        "lab-b",
        FakeState(
            gpus=[
                FakeGpu(
                    name="NVIDIA GeForce RTX 4090",
                    total=24 * GiB,
                    used=11 * GiB,
                    processes=[FakeProcess(pid_b, 10 * GiB, sm=0)],
                )
            ]
        ),
    )
    args = argparse.Namespace(
        demo=False,
        host=["lab-a", "lab-b"],
        interval=0.5,
        window="10m",
        record=False,
        read_only=False,
        prometheus=None,
        file=None,
    )
    feed, window = build_window(args, poll_ms=60_000)
    qtbot.addWidget(window)
    try:
        window.resize(1400, 900)
        window.show()
        cards = window.gpu_panel.cards
        refresh_until(window, qtbot, lambda: len(window.gpu_panel.cards) == 3, what="both hosts")
        cards = window.gpu_panel.cards
        assert sorted(cards) == [0, 1, HOST_BLOCK]  # grouped: lab-a's GPUs, then lab-b's
        heads = [cards[i].heading.text().split("  ·  ")[0] for i in sorted(cards)]
        assert heads == ["lab-a GPU 0", "lab-a GPU 1", "lab-b GPU 0"]
        table = window.table
        assert not table.view.isColumnHidden(COL["Host"])
        assert table.view.horizontalHeader().visualIndex(COL["Host"]) == 0
        rows = {r.pid: (r.host, r.host_gpu) for r in table.model.rows}
        assert rows == {pid_a: ("lab-a", 0), pid_b: ("lab-b", 0)}
        chips = window.hosts_bar.chips
        assert chips["lab-a"].text() == "● lab-a  2 GPUs" and chips["lab-b"].text() == "● lab-b  1 GPU"
        assert window.windowTitle() == "vramscope — lab-a, lab-b"
        assert window.controls.source_label.text().strip() == "Source: 2 hosts over ssh"

        # ending lab-b's process: the confirmation says which machine it is on
        key = next(r.key for r in table.model.rows if r.pid == pid_b)
        window.table.select_key(key)
        with qtbot.waitSignal(window.services.panels.alerts.dialog_opened, timeout=10000) as opened:
            assert end_selected_process(window, window.services.panels)
        dialog = opened.args[0]
        assert dialog.windowTitle() == "End process on lab-b"
        assert f"End pid {pid_b} on lab-b?" in dialog.headline.text()
        assert dialog.fields["Host"].text() == "lab-b" and dialog.summary.refusal is None
        dialog.reject()
        qtbot.wait(200)
        window.refresh(force=True)
        window.grab().save(str(artifacts_dir / "hosts-window-1400x900.png"))
        window.resize(1024, 700)
        qtbot.wait(200)
        window.grab().save(str(artifacts_dir / "hosts-window-1024x700.png"))

        # lab-b goes away (the machine is gone): marked, retried; lab-a goes on
        b = feed.source.hosts[1]
        hosts.remove("lab-b")
        os.killpg(b._proc.pid, signal.SIGKILL)
        refresh_until(window, qtbot, lambda: chips["lab-b"].text().startswith("✕ lab-b"), what="lab-b marked")
        assert (
            cards[HOST_BLOCK].error.isVisibleTo(window)
            and "connection lost" in cards[HOST_BLOCK].error.text()
        )
        assert not cards[0].error.isVisibleTo(window)
        assert chips["lab-a"].text().startswith("●")
        window.resize(1400, 900)
        qtbot.wait(200)
        window.grab().save(str(artifacts_dir / "hosts-window-dropped-1400x900.png"))
    finally:
        window.services.close()


@pytest.mark.slow
def test_a_reopened_recording_of_two_hosts_names_them_as_the_live_window_did(
    themed, qtbot, hosts, sleepers, tmp_path, artifacts_dir
):
    from remote.test_hosts_session import record_two_hosts
    from vramscope.ui.window.session_files import open_session_window
    from vramscope.ui.processes.process_model import COL

    session = tmp_path / "two-hosts.vramscope"
    pids = record_two_hosts(hosts, sleepers, session)
    _feed, window = open_session_window(str(session))
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    assert window.windowTitle() == f"vramscope — lab-a, lab-b — {session}"
    assert window.controls.source_label.text().strip() == "Source: session · 2 hosts"
    cards = window.gpu_panel.cards
    heads = [cards[i].heading.text().split("  ·  ")[0] for i in sorted(cards)]
    assert heads == ["lab-a GPU 0", "lab-a GPU 1", "lab-b GPU 0"]
    table = window.table
    assert not table.view.isColumnHidden(COL["Host"])
    open_every_group(window)  # lab-a's two sleepers share a parent and command line: one row
    rows = sorted((r.host, r.host_gpu, r.pid) for r in table.model.rows if not r.members)
    assert rows == sorted(
        [
            ("lab-a", 0, pids["a"]),
            ("lab-a", 0, pids["both"]),
            ("lab-b", 0, pids["b"]),
            ("lab-b", 0, pids["both"]),
        ]
    )
    assert "Recorded session of lab-a, lab-b:" in window.scrubber.title.text()
    scrubber = window.scrubber  # scrubbing back keeps the hosts too
    scrubber.set_time(scrubber.t0 + 0.75 * (scrubber.t1 - scrubber.t0))
    assert {r.host for r in table.model.rows} == {"lab-a", "lab-b"}
    qtbot.wait(200)
    window.grab().save(str(artifacts_dir / "hosts-session-1400x900.png"))
    window.resize(1024, 700)
    qtbot.wait(200)
    window.grab().save(str(artifacts_dir / "hosts-session-1024x700.png"))
    window.close()


def _hosts_frame(*names, simulated=False):
    from vramscope.core.samples import Frame, HostState

    return Frame(time=0.0, simulated=simulated, hosts=tuple(HostState(n, "connected") for n in names))


def test_the_window_title_names_the_hosts_watched():
    from vramscope.core.samples import Frame, GpuSample
    from vramscope.ui.window.status_line import window_title

    assert window_title(Frame(time=0.0, gpus=(GpuSample(index=0),))) == "vramscope"  # as before
    assert window_title(Frame(time=0.0, simulated=True)) == "vramscope — demo (simulated data)"
    assert window_title(_hosts_frame("gpu-box-1")) == "vramscope — gpu-box-1"
    assert window_title(_hosts_frame("a", "alice@b")) == "vramscope — a, alice@b"
    assert window_title(_hosts_frame("a", "b", "c")) == "vramscope — 3 hosts"
    assert window_title(_hosts_frame("a", "b", simulated=True)) == "vramscope — a, b — demo (simulated data)"
    # a reopened recording has no host states, only its GPUs' hosts
    recorded = Frame(
        time=0.0,
        gpus=(
            GpuSample(index=0, host="a", host_index=0),
            GpuSample(index=HOST_BLOCK, host="b", host_index=0),
        ),
    )
    assert window_title(recorded, "/s/x.vramscope") == "vramscope — a, b — /s/x.vramscope"


def test_an_alert_on_another_machine_names_it_in_details_and_notification(qapp):
    from vramscope.core.detectors.alert import WARNING, Alert
    from vramscope.ui.alerts.alert_texts import alert_html
    from vramscope.ui.alerts.tray import TrayNotifier

    alert = Alert(
        kind="near_oom",
        severity=WARNING,
        gpu=HOST_BLOCK,
        pid=None,
        start_time=None,
        since=0.0,
        message="lab-b GPU 0 near out of memory",
        host="lab-b",
        host_index=0,
    )
    html = alert_html(alert, now=10.0)
    assert "; lab-b GPU 0" in html and "GPU 64" not in html
    tray = TrayNotifier(available=False)
    tray.notify([alert])
    assert tray.suppressed == [("vramscope: Near out of memory on lab-b", alert.message)]
