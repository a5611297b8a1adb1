"""Regenerate the README's screenshots of the demo window (offscreen).

    .venv/bin/python packaging/screenshots.py      -> resources/screenshots/*.png

The busy simulated workstation (16 processes on two GPUs, a training run
under the agent, a leaking embedding server: ``vramscope --demo --busy``) is
fed 15 minutes of frames without waiting, then the monitor, alerts and
PyTorch agents tabs are grabbed at 1400 x 900, and the monitor at 1024 x 700.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

OUT = pathlib.Path(__file__).resolve().parents[1] / "resources" / "screenshots"


def main() -> None:
    from vramscope.sources.busy_demo import BusyWorkstation
    from vramscope.ui.app import build_window, create_app
    from vramscope.core.user_settings import Settings

    app = create_app(theme_mode="dark")
    settings = Settings(pathlib.Path(tempfile.mkdtemp()) / "settings.toml")
    args = argparse.Namespace(
        demo=True,
        interval=None,
        window=None,
        theme=None,
        record=None,
        read_only=False,
        prometheus=None,
        file=None,
    )
    settings.merge_args(args)
    seconds = 900
    start = time.time() - seconds
    source = BusyWorkstation(seed=1, start_time=start)
    feed, window = build_window(args, source=source, start=False, poll_ms=60_000, settings=settings)
    window.resize(1400, 900)
    window.show()
    for k in range(seconds):
        feed.sampler.sample_once(start + k)
    window.refresh(force=True)
    OUT.mkdir(parents=True, exist_ok=True)
    for index, name in ((0, "demo"), (1, "alerts"), (2, "agents")):
        window.tabs.setCurrentIndex(index)
        window.refresh(force=True)
        app.processEvents()
        window.grab().save(str(OUT / f"{name}.png"))
        print(OUT / f"{name}.png")
    window.tabs.setCurrentIndex(0)
    window.resize(1024, 700)
    window.refresh(force=True)
    app.processEvents()
    window.grab().save(str(OUT / "demo-1024x700.png"))
    print(OUT / "demo-1024x700.png")
    window.services.close()


if __name__ == "__main__":
    main()
