"""The snapshot viewer started as a user starts it (`vramscope FILE.pickle`: a process of
its own) reads the file, draws it and photographs itself once drawn (the hidden
``--shots``); nothing it prints is a traceback, and what it says it shows is the
independent replay's peak. A pickle that would run code is refused there too, and
runs nothing."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import pytest

from tests.core.snapshot.snapshot_format import replay
from user_path.helpers import no_traceback
from vramscope.core.snapshot.example import training_snapshot
from vramscope.core.units import fmt_bytes

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def _viewer(tmp_path, path):
    shots = tmp_path / "shots"
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", str(path), "--shots", str(shots), "--shots-after", "0.5"],
        env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
        capture_output=True,
        text=True,
        timeout=150,
    )
    no_traceback(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr[-2000:]
    return done, shots, json.loads((shots / "shown.json").read_text())


def test_the_viewer_process_draws_the_snapshot_and_photographs_itself(tmp_path, private_user_dirs):
    snap = training_snapshot()
    path = tmp_path / "train_step.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    _done, shots, shown = _viewer(tmp_path, path)
    assert shown["pictures"] == ["snapshot-viewer-1400x900.png", "snapshot-viewer-1024x700.png"]
    assert all((shots / p).stat().st_size > 20_000 for p in shown["pictures"])
    assert shown["error"] is None and shown["file"] == str(path)
    peak = replay(snap)[0]
    assert f"peak allocated {fmt_bytes(peak)}" in shown["figures"]
    assert shown["alive"] and shown["cursor"].startswith("Alive at the cursor") and shown["segment_map"]


def test_a_pickle_that_would_run_code_is_refused_by_the_viewer_process(tmp_path, private_user_dirs):
    class RunsCode:
        def __reduce__(self):
            return (open, (str(tmp_path / "ran"), "w"))

    path = tmp_path / "evil.pickle"
    path.write_bytes(
        pickle.dumps({"segments": [], "device_traces": [[{"frames": [RunsCode()]}]]}, protocol=4)
    )
    done, _shots, shown = _viewer(tmp_path, path)
    assert "nothing in it was run" in shown["error"]
    said = [line for line in done.stderr.splitlines() if line.startswith("vramscope:")]
    assert len(said) == 1 and "nothing in it was run" in said[0], done.stderr  # (Qt's offscreen notes aside)
    assert not (tmp_path / "ran").exists()
