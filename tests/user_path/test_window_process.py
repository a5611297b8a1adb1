"""The window started as a user starts it (`vramscope --demo --busy`: its own
process and its sampler child) shows, by its own account, the agents tab's
detail tabs and the busy machine's processes; it grabs every tab at both sizes
and nothing it or its sampler prints is a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from user_path.helpers import no_traceback

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


def test_the_busy_demo_window_shows_its_agents_modules_and_segments(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    shots = tmp_path / "shots"
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", "--demo", "--busy", "--shots", str(shots), "--shots-after", "10"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    no_traceback(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr[-2000:]
    shown = json.loads((shots / "shown.json").read_text())
    assert shown["tabs"] == ["Monitor", "Alerts", "PyTorch agents", "Planner"]
    assert len(shown["pictures"]) == 8 and all((shots / p).stat().st_size > 10_000 for p in shown["pictures"])
    trained = [a for a in shown["agents"] if "Modules" in a["details"]]
    assert trained, shown["agents"]
    assert trained[0]["modules"] > 0
    assert any(d.startswith("Allocator segments") for a in shown["agents"] for d in a["details"])
    assert any(d.startswith("OOM post-mortem") for a in shown["agents"] for d in a["details"])  # (partway in)
    assert shown["table_rows"] >= 6  # sixteen processes, groups folded
