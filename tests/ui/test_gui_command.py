"""`vramscope [--demo] [FILE]`: options, and a clean start and quit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from vramscope.cli import main
from vramscope.commands import gui


def test_window_options_parse():
    args = gui.build_parser().parse_args(["--demo", "--interval", "0.5", "--window", "1h", "run.vramscope"])
    assert (args.demo, args.interval, args.window, args.file) == (True, 0.5, "1h", "run.vramscope")
    assert args.command is None and args.quit_after is None


@pytest.mark.parametrize("value", ["0.05", "61", "soon"])
def test_interval_outside_range_is_refused_with_a_message(value, capsys):
    with pytest.raises(SystemExit) as exc:
        gui.build_parser().parse_args(["--interval", value])
    assert exc.value.code == 2
    assert "--interval" in capsys.readouterr().err


def test_quit_after_is_hidden_from_help():
    assert "--quit-after" not in gui.build_parser().format_help()


@pytest.mark.slow
def test_the_demo_window_starts_and_quits(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "--demo", "--interval", "0.2", "--quit-after", "1.5"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr  # nothing failed inside the event loop


def test_a_session_file_goes_to_the_window_not_to_a_subcommand(monkeypatch):
    seen = {}
    monkeypatch.setattr(gui, "run", lambda args: seen.setdefault("args", args) and 0)
    assert main(["--demo", "yesterday.vramscope"]) == 0
    assert seen["args"].file == "yesterday.vramscope" and seen["args"].demo
