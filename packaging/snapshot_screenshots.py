"""The README's screenshots of the snapshot viewer, from the window a user starts.

    .venv/bin/python packaging/snapshot_screenshots.py [FILE.pickle [OUT_DIR]]

Runs ``vramscope FILE.pickle`` as a user would -- its own process, in fresh
settings, data and runtime directories -- offscreen, and lets the window grab
itself once the snapshot is read and drawn (the hidden ``--shots`` option,
ui/window/window_shots.py: the viewer says when it has settled), at 1400 x 900
and 1024 x 700, into ``resources/screenshots/snapshot-viewer.png`` and
``snapshot-viewer-1024x700.png``. Without a FILE, the made-up training run of
``core/snapshot/example.py``. Anything the app printed that looks like a
traceback stops the script; ``shown.json`` beside the window's own pictures
says what it showed.
"""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import tempfile

OUT = pathlib.Path(__file__).resolve().parents[1] / "resources" / "screenshots"
# README's picture -> the window's own grab
PICTURES = {
    "snapshot-viewer.png": "snapshot-viewer-1400x900.png",
    "snapshot-viewer-1024x700.png": "snapshot-viewer-1024x700.png",
}


def main() -> int:
    out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    home = pathlib.Path(tempfile.mkdtemp(prefix="vramscope-shots-"))
    path = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
    if path is None:  # the made-up training run of core/snapshot/example.py
        from vramscope.core.snapshot.example import training_snapshot

        path = str(home / "train_step.pickle")
        with open(path, "wb") as f:
            pickle.dump(training_snapshot(), f, protocol=4)
    shots = home / "shots"
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        (home / var.lower()).mkdir(mode=0o700)
        env[var] = str(home / var.lower())
    env["VRAMSCOPE_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramscope",
            path,
            "--theme",
            "dark",
            "--shots",
            str(shots),
            "--shots-after",
            "1",
        ],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0 or "Traceback (most recent call last)" in done.stderr:
        print(done.stderr, file=sys.stderr)
        print(f"vramscope exited with {done.returncode}: no screenshots", file=sys.stderr)
        return 1
    shown = json.loads((shots / "shown.json").read_text())
    if shown.get("error"):
        print(f"the viewer refused the file: {shown['error']}", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    for name, grabbed in PICTURES.items():
        shutil.copyfile(shots / grabbed, out / name)
        print(out / name)
    print(json.dumps({k: shown[k] for k in ("figures", "cursor", "reader")}, indent=1))
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
