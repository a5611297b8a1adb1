"""Regenerate the README's screenshots from the window a user starts.

    .venv/bin/python packaging/screenshots.py      -> resources/screenshots/*.png

Runs ``vramscope --demo --busy`` as a user would -- its own process, its own
sampler process, the frames read from that process's stream, in fresh
settings, data and runtime directories -- offscreen, and lets the window grab
its own tabs once it has shown the busy machine for a while (the hidden
``--shots`` option, ui/window/window_shots.py). The monitor, alerts and PyTorch agents
tabs at 1400 x 900 and the monitor at 1024 x 700 are copied into
resources/screenshots/; ``shown.json`` beside the pictures says what the window
showed, and anything the app printed that looks like a traceback stops the
script.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

OUT = pathlib.Path(__file__).resolve().parents[1] / "resources" / "screenshots"
# README's picture -> the window's own grab
PICTURES = {
    "demo.png": "monitor-1400x900.png",
    "alerts.png": "alerts-1400x900.png",
    "agents.png": "pytorch-agents-1400x900.png",
    "demo-1024x700.png": "monitor-1024x700.png",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=20.0, help="seconds the window runs before the grabs")
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    args = parser.parse_args()
    home = pathlib.Path(tempfile.mkdtemp(prefix="vramscope-shots-"))
    shots = home / "shots"
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        (home / var.lower()).mkdir(mode=0o700)
        env[var] = str(home / var.lower())
    env["VRAMSCOPE_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", "--demo", "--busy", "--theme", "dark"]
        + ["--shots", str(shots), "--shots-after", str(args.after)],
        env=env,
        capture_output=True,
        text=True,
        timeout=args.after + 120,
    )
    if done.returncode != 0 or "Traceback (most recent call last)" in done.stderr:
        print(done.stderr, file=sys.stderr)
        print(f"vramscope exited with {done.returncode}: no screenshots", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for name, grabbed in PICTURES.items():
        shutil.copyfile(shots / grabbed, args.out / name)
        print(args.out / name)
    shown = json.loads((shots / "shown.json").read_text())
    print(json.dumps({k: v for k, v in shown.items() if k != "pictures"}, indent=1))
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
