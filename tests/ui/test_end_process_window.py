"""Ending a squatter from the window: the confirmation, SIGTERM, and the GPU's
process list without it (the fake driver, like a real one, stops listing a
process that exited)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading

import pytest

from fakenvml import FakeGpu, FakeProcess, FakeState, GiB
from vramscope.ui.window.app import build_window
from vramscope.ui.window.panels import end_selected_process

from .helpers import table_column


@pytest.fixture
def idle_holder():
    """A real idle Python process, reaped as soon as it exits (no zombie left)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    threading.Thread(target=proc.wait, daemon=True).start()
    yield proc
    if proc.poll() is None:
        proc.kill()


def test_ending_a_squatter_from_the_window_removes_it_from_the_gpu(
    themed_app, qtbot, fake_nvml, idle_holder, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))  # the audit log goes here
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    fake_nvml.write(
        FakeState(
            drop_exited=True,
            gpus=[FakeGpu(used=3 * GiB, processes=[FakeProcess(idle_holder.pid, 3 * GiB, sm=None)])],
        )
    )
    args = argparse.Namespace(
        demo=False, interval=1.0, window="1m", record=False, read_only=False, prometheus=None, file=None
    )
    feed, window = build_window(args, start=False, poll_ms=60_000)
    qtbot.addWidget(window)
    window.show()
    try:
        feed.sampler.sample_once()
        window.refresh(force=True)
        assert str(idle_holder.pid) in table_column(window, "PID")
        key = next(r.key for r in window.table.model.rows if r.pid == idle_holder.pid)
        window.table.select_key(key)

        with qtbot.waitSignal(window.services.panels.alerts.dialog_opened, timeout=5000) as opened:
            assert end_selected_process(window, window.services.panels)
        dialog = opened.args[0]
        summary = dialog.summary  # what the confirmation shows
        assert summary.pid == idle_holder.pid and summary.memory == 3 * GiB
        assert "time.sleep(300)" in (summary.command or "") and summary.refusal is None
        dialog.accept()
        qtbot.waitUntil(lambda: idle_holder.poll() is not None, timeout=5000)

        feed.sampler.sample_once()
        window.refresh(force=True)
        assert str(idle_holder.pid) not in table_column(window, "PID")
        assert all(p.pid != idle_holder.pid for p in window.store.latest.gpus[0].processes)
    finally:
        window.services.close()
