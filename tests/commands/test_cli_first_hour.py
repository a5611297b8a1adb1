"""The command line as a new user meets it: a mistyped command, --busy alone,
`run --help`, `status` saying there are no alerts and what kind each process is."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from vramscope.cli import main
from vramscope.core.processes.process_rows import host_memory_text
from vramscope.core.status.status_table import kind_text
from vramscope.core.units import GiB, MiB


def test_a_mistyped_command_is_an_error_not_a_missing_display(capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    assert main(["statuss"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'statuss'" in err and "vramscope status" in err
    assert "display" not in err


def test_busy_without_demo_is_refused(capsys):
    assert main(["--busy"]) == 2
    assert main(["status", "--busy"]) == 2
    assert "--demo" in capsys.readouterr().err


def test_run_help_goes_to_stdout():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", "run", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: vramscope run") and not done.stderr


def test_status_says_alerts_none_and_the_process_kind(capsys):
    assert main(["status", "--demo", "--busy"]) == 0
    out = capsys.readouterr().out
    assert "TYPE" in out
    xorg = next(line for line in out.splitlines() if "Xorg" in line)
    assert " G " in xorg  # the graphics process, as nvitop marks it
    assert kind_text(("compute", "graphics")) == "C+G" and kind_text(()) == ""
    lines = out.splitlines()
    assert any(line.startswith("alerts:") for line in lines)


def test_status_with_no_alerts_says_none():
    from vramscope.core.samples import Frame
    from vramscope.core.status.status_table import render_table

    assert "alerts: none" in render_table(Frame(time=0.0, gpus=()), [])


def test_status_watch_prints_every_sample_on_a_terminal(monkeypatch):
    from vramscope.commands import status

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["status", "--demo", "--watch", "0.3", "--interval", "0.1"]) == 0
    text = out.getvalue()
    assert text.count(status.CLEAR) >= 3 and text.count("vramscope status ") >= 3


def test_small_host_memory_reads_in_mib():
    assert host_memory_text(52 * MiB) == "52 MiB"
    assert host_memory_text(3 * GiB) == "3.0 GiB"


def test_the_busy_demo_starts_partway_through_its_story():
    """Watching the busy demo from its first second: train.py has stepped, measured
    its modules and caught its OOM already (they came at minutes 1 to 7 before)."""
    import json

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--demo", "--busy", "--json", "--watch", "0.6"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    (train,) = json.loads(done.stdout)["agents"]
    assert train["step"] > 100 and train["modules"]
    assert train["devices"][0]["num_ooms"] == 1
