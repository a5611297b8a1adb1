"""The window over several hosts (--host a --host b) through the stand-in ssh:
cards grouped by host with the host in their titles, a Host column, a chip
per host, and a dropped host marked while the other goes on."""

from __future__ import annotations

import argparse
import os
import signal
import time

import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState

pytest.importorskip("PySide6")

from vramscope.sources.hosts import HOST_BLOCK  # noqa: E402


@pytest.fixture
def themed(qapp):
    from vramscope.ui import theme
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


def test_window_watches_two_hosts_and_marks_the_one_that_drops(themed, qtbot, hosts, sleepers,
                                                              artifacts_dir):
    from vramscope.ui.app import build_window
    from vramscope.ui.process_model import COL

    pid_a, pid_b = sleepers(2)
    hosts.add("lab-a", FakeState(gpus=[
        FakeGpu(name="NVIDIA RTX A6000", total=48 * GiB, used=30 * GiB,
                processes=[FakeProcess(pid_a, 29 * GiB, sm=80)]),
        FakeGpu(name="NVIDIA RTX A6000", total=48 * GiB, used=2 * GiB)]))
    hosts.add("lab-b", FakeState(gpus=[
        FakeGpu(name="NVIDIA GeForce RTX 4090", total=24 * GiB, used=11 * GiB,
                processes=[FakeProcess(pid_b, 10 * GiB, sm=0)])]))
    args = argparse.Namespace(demo=False, host=["lab-a", "lab-b"], interval=0.5, window="10m",
                              record=False, read_only=False, prometheus=None, file=None)
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
        refresh_until(window, qtbot, lambda: chips["lab-b"].text().startswith("✕ lab-b"),
                      what="lab-b marked")
        assert cards[HOST_BLOCK].error.isVisibleTo(window) and "connection lost" in cards[HOST_BLOCK].error.text()
        assert not cards[0].error.isVisibleTo(window)
        assert chips["lab-a"].text().startswith("●")
        window.resize(1400, 900)
        qtbot.wait(200)
        window.grab().save(str(artifacts_dir / "hosts-window-dropped-1400x900.png"))
    finally:
        window.services.close()
