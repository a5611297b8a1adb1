"""Nothing recorded is lost: recorders started together each keep their file, and a
refused start leaves nothing behind that blocks the retry."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from vramscope.cli import main
from vramscope.core.session.library import default_directory

pytestmark = pytest.mark.timeout(120)


@pytest.mark.slow
def test_recorders_started_together_each_get_their_own_file():
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "vramscope", "record", "--demo", "--duration", "1.5", "--interval", "0.5"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=100) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in results]
    files = [f for f in os.listdir(default_directory()) if f.endswith(".vramscope")]
    assert len(files) == 4  # was: one file, three refused when started in the same second


@pytest.mark.slow
def test_a_metrics_port_in_use_leaves_no_session_behind(tmp_path, capsys):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    out = tmp_path / "run.vramscope"
    try:
        code = main(
            ["record", "--demo", "--duration", "1", "--prometheus", f"127.0.0.1:{port}", "--out", str(out)]
        )
        err = capsys.readouterr().err
        assert code == 2 and "cannot serve metrics" in err and "nothing recorded" in err
        assert not out.exists()  # so the retry with the same --out works
    finally:
        busy.close()
    assert main(["record", "--demo", "--duration", "1", "--interval", "0.5", "--out", str(out)]) == 0
    assert out.exists()
