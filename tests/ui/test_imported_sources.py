"""The window does not keep the source of every module it imported (PySide6's
import hook reads each one; linecache kept ~200k lines that every full garbage
collection walked)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_the_running_window_keeps_few_source_lines():
    app = pathlib.Path(__file__).resolve().parents[2] / "app"
    code = (
        "import linecache, sys; sys.argv = ['vramscope', '--demo', '--busy', '--quit-after', '3']\n"
        "from vramscope.cli import main\n"
        "code = main()\n"
        "print('LINES', sum(len(entry[2]) for entry in linecache.cache.values() if len(entry) > 2))\n"
        "print('MODULES', len(sys.modules))\n"
        "raise SystemExit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(app), "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = int(r.stdout.split("LINES ")[1].split()[0])
    modules = int(r.stdout.split("MODULES ")[1].split()[0])
    assert modules > 400  # (the window imported what it always does)
    assert lines < 20_000, lines  # not the source of every one of them (150-200k lines)
