"""The commands on the one runner (core/flow/runner.py): `status --watch` prints each
pass through it and stops on a signal with the pass finished; every command
takes and refuses `--interval` the same way."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from vramscope.cli import build_parser

HEADER = "vramscope status  "  # the first line of each printed pass
COMMANDS = ([], ["record"], ["status"], ["stream"])  # [] = the window


def _refusal(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err.split("argument --interval:", 1)[1].strip()


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "0.01", "61", "1e400", "fast"])
def test_every_command_refuses_a_bad_interval_with_the_same_words(value, capsys):
    said = {" ".join(c) or "window": _refusal([*c, "--interval", value], capsys) for c in COMMANDS}
    assert len(set(said.values())) == 1, said
    assert value in next(iter(said.values()))


@pytest.mark.parametrize("value, seconds", [("0.1", 0.1), ("0.5", 0.5), ("60", 60.0)])
def test_every_command_takes_a_good_interval(value, seconds):
    for c in COMMANDS:
        assert build_parser().parse_args([*c, "--interval", value]).interval == seconds


@pytest.mark.slow
def test_status_watch_prints_every_pass_through_the_runner():
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--demo", "--watch", "1", "--interval", "0.25"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(HEADER) == 5  # t = 0, 0.25, 0.5, 0.75, 1: four live, then the last


def _watching():
    p = subprocess.Popen(
        [sys.executable, "-m", "vramscope", "status", "--demo", "--watch", "60", "--interval", "0.3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = 0
    while seen < 2:  # two passes printed: the runner is running
        line = p.stdout.readline()
        assert line, p.stderr.read()
        seen += line.startswith(HEADER)
    return p


@pytest.mark.parametrize(
    "signum, code, words",
    [
        (signal.SIGINT, 130, "vramscope status: interrupted"),
        (signal.SIGTERM, 143, "vramscope status: stopped by SIGTERM"),
    ],
)
def test_status_watch_stops_on_a_signal_at_once_with_one_line(signum, code, words):
    p = _watching()
    t0 = time.monotonic()
    p.send_signal(signum)
    out, err = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 5  # the pass under way, not the 60 s asked for
    assert p.returncode == code
    assert err.strip() == words
    assert not out.endswith(HEADER)  # no half-printed pass
