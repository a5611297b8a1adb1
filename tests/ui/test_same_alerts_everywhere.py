"""One machine, one settings file: the same alerts in the window, in `record`'s
session, in `status --json` and in `stream` (issue 28). The machine is the fake
libnvidia-ml.so.1 with a real process holding 21 of 24 GiB: 3 GiB free is fine by
the default near-OOM threshold (1 GiB) and near-OOM by a saved one of 4 GiB."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.core.session import open_session
from vramscope.core.settings.user_settings import Settings


def _kinds(alerts) -> set[tuple]:
    return {(a["kind"], a["severity"], a["gpu"]) for a in alerts}


def _stream_alerts(env) -> set[tuple]:
    """The alerts on the second frame `vramscope stream` writes (what a window on
    another machine, or the window's own sampler process, reads)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "vramscope", "stream", "--interval", "0.5", "--count", "2"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        frames, alerts = 0, []
        while frames < 2:
            line = p.stdout.readline()
            assert line, p.stderr.read()
            message = json.loads(line)
            if message["type"] in ("frame", "delta"):  # a delta carries alerts when they changed
                frames += 1
                alerts = message.get("alerts", alerts)
    finally:
        p.stdin.close()
        p.wait(timeout=60)
    return _kinds(alerts)


def _window_alerts(args) -> set[tuple]:
    """The alerts the window shows: its sampler process's (as the app runs it)."""
    from vramscope.ui.window.app import build_window

    settings = Settings()
    settings.merge_args(args)
    feed, window = build_window(args, start=False, poll_ms=60_000, settings=settings, sampler=True)
    try:
        for _ in range(2):  # the second frame, as for `stream`
            feed.sampler.sample_once()
        panel = window.services.panels.alerts
        panel.refresh()
        return {
            (a.kind, a.severity.value if hasattr(a.severity, "value") else a.severity, a.gpu)
            for a in panel.alerts()
        }
    finally:
        window.services.close()
        window.close()


@pytest.mark.slow
@pytest.mark.parametrize("saved_free_gib", [None, 4])
def test_record_status_stream_and_the_window_raise_the_same_alerts(
    saved_free_gib, fake_nvml, sleepers, themed_app, qtbot, tmp_path, monkeypatch
):
    [pid] = sleepers(1)
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(
                    total=24 * GiB,
                    used=21 * GiB,
                    utilization=(90, 40),
                    processes=[FakeProcess(pid, 21 * GiB, sm=90)],
                )
            ]
        )
    )
    if saved_free_gib is not None:  # the settings dialog's "Near-OOM: free below"
        Settings().update_diagnostics(near_oom_free_bytes=saved_free_gib * GiB)
    env = fake_nvml.env()  # HOME and XDG_CONFIG_HOME: this test's (tests/conftest.py)

    status = subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    in_status = _kinds(json.loads(status.stdout)["alerts"])

    out = tmp_path / "run.vramscope"
    record = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramscope",
            "record",
            "--out",
            str(out),
            "--duration",
            "1",
            "--interval",
            "0.5",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert record.returncode == 0, record.stderr
    in_session = _kinds(open_session(out).recorded.alerts())

    args = argparse.Namespace(
        demo=False,
        interval=None,
        window=None,
        theme=None,
        record=False,
        read_only=False,
        prometheus=None,
        file=None,
        host=None,
        from_prometheus=None,
    )
    for name, value in env.items():  # the window's sampler process loads the fake too
        monkeypatch.setenv(name, value)
    in_window = _window_alerts(args)
    in_stream = _stream_alerts(env)

    expected = {("near_oom", "warning", 0)} if saved_free_gib else set()
    assert {k for k in in_status if k[0] == "near_oom"} == expected
    assert in_status == in_session == in_window == in_stream
