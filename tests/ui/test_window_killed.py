"""A window killed mid-recording (SIGKILL: no handler runs) loses nothing: its
sampler process recorded every sample, sees its window gone (the pipe
closes), ends within seconds, and the session reopens and exports with
samples up to the kill."""

from __future__ import annotations

import pytest
import os
import pathlib
import signal
import subprocess
import sys
import time

import psutil

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, subprocess_env, write_state
from vramscope.core.export import export_csv
from vramscope.core.session import open_session
from vramscope.core.session.library import default_directory

APP = pathlib.Path(__file__).resolve().parents[2] / "app"


def recorded(directory: pathlib.Path) -> tuple[pathlib.Path | None, int]:
    for path in sorted(directory.glob("*.vramscope")) if directory.is_dir() else ():
        try:
            reader = open_session(path)
        except Exception:  # noqa: BLE001 - not written yet
            continue
        try:
            return path, len(reader.frame_times())
        finally:
            reader.close()
    return None, 0


@pytest.mark.slow
def test_a_killed_window_leaves_its_session_whole_and_no_sampler(fake_nvml_files, sleepers, tmp_path):
    pid = sleepers(1)[0]
    write_state(
        fake_nvml_files.state_path,
        FakeState(gpus=[FakeGpu(used=3 * GiB, processes=[FakeProcess(pid, 3 * GiB)])]),
    )
    env = subprocess_env(fake_nvml_files.lib_path.parent, fake_nvml_files.state_path)
    env.update(QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(APP))
    window = subprocess.Popen(
        [sys.executable, "-m", "vramscope", "--interval", "0.2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    directory = default_directory()
    try:
        deadline = time.monotonic() + 60
        path, samples = None, 0
        while samples < 10 and time.monotonic() < deadline:
            time.sleep(0.3)
            path, samples = recorded(directory)
        assert samples >= 10, "the window's sampler recorded nothing"
        (sampler,) = [c for c in psutil.Process(window.pid).children() if "stream" in c.cmdline()]
        killed_at = time.time()
        os.kill(window.pid, signal.SIGKILL)
        window.wait(10)
        sampler.wait(5)  # no orphan: it ends within seconds of losing its window
    finally:
        if window.poll() is None:
            window.kill()
    reader = open_session(path)
    try:
        times = reader.frame_times()
        assert len(times) >= samples
        assert times[-1] >= killed_at - 1.0  # up to the kill
        assert not reader.damaged
    finally:
        reader.close()
    out = tmp_path / "session.csv"
    reader = open_session(path)
    try:
        export_csv(reader, out)
    finally:
        reader.close()
    assert out.stat().st_size > 0 and str(pid) in out.read_text()
