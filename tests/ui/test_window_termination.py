"""A window ended with SIGTERM (logout, kill) closes its recording like a normal
quit: the final commit, and no -wal/-shm files left beside the session."""

from __future__ import annotations

import pytest
import os
import signal
import subprocess
import sys
import time

from fakenvml import FakeGpu, FakeProcess, FakeState, GiB
from vramscope.core.session import open_session
from vramscope.core.session.library import default_directory


@pytest.mark.slow
def test_sigterm_leaves_one_complete_session_file(fake_nvml_files, sleepers, tmp_path):
    [pid] = sleepers(1)
    fake_nvml_files.write(
        FakeState(gpus=[FakeGpu(used=3 * GiB, processes=[FakeProcess(pid, 2 * GiB, sm=5)])])
    )
    env = dict(fake_nvml_files.env(), QT_QPA_PLATFORM="offscreen")
    window = subprocess.Popen(
        [sys.executable, "-m", "vramscope", "--interval", "0.2"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        directory = default_directory()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            wal = list(directory.glob("*-wal")) if directory.exists() else []
            if wal:
                break
            time.sleep(0.2)
        assert wal, "the window never started recording"
        time.sleep(1.0)  # a few samples in
        window.send_signal(signal.SIGTERM)
        _, err = window.communicate(timeout=30)
    finally:
        if window.poll() is None:
            window.kill()
            window.wait()
    assert window.returncode == 0, err
    files = sorted(p.name for p in directory.iterdir())
    assert len(files) == 1 and files[0].endswith(".vramscope"), files
    with open_session(directory / files[0]) as reader:
        assert len(reader) >= 3 and not reader.damaged
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_taken_prometheus_port_is_said_not_a_traceback(tmp_path):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "vramscope",
                "--demo",
                "--prometheus",
                f"127.0.0.1:{port}",
                "--quit-after",
                "1.5",
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        taken.close()
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"cannot serve on 127.0.0.1:{port}" in r.stderr
