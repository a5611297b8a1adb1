"""The README's screenshots of the snapshot viewer, through the real command (offscreen).

    .venv/bin/python packaging/snapshot_screenshots.py [FILE.pickle [OUT_DIR]]

Runs ``vramscope FILE.pickle`` in this process (``vramscope.cli.main``, the
installed command's entry point) on Qt's offscreen platform, waits until the
snapshot is read and drawn, and grabs the viewer at 1400 x 900 and 1024 x 700.
Without a FILE, the made-up training run of ``core/snapshot/example.py``.
"""

from __future__ import annotations

import os
import pathlib
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

OUT = pathlib.Path(__file__).resolve().parents[1] / "resources" / "screenshots"


def main() -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from vramscope import cli
    from vramscope.ui.window.app import create_app
    from vramscope.ui.snapshot.window import SnapshotWindow

    out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    path = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
    if path is None:  # the made-up training run of core/snapshot/example.py
        import pickle
        import tempfile

        from vramscope.core.snapshot.example import training_snapshot

        path = os.path.join(tempfile.mkdtemp(prefix="vs-shot-"), "train_step.pickle")
        with open(path, "wb") as f:
            pickle.dump(training_snapshot(), f, protocol=4)
    out.mkdir(parents=True, exist_ok=True)
    app = create_app(theme_mode="dark")

    def grab() -> None:
        windows = [
            w for w in QApplication.topLevelWidgets() if isinstance(w, SnapshotWindow) and w.isVisible()
        ]
        if not windows or windows[0].tl is None:
            QTimer.singleShot(500, grab)  # still reading
            return
        w = windows[0]
        for (width, height), name in (
            ((1400, 900), "snapshot-viewer.png"),
            ((1024, 700), "snapshot-viewer-1024x700.png"),
        ):
            w.resize(width, height)
            for _ in range(5):
                app.processEvents()
            w.grab().save(str(out / name))
            print(out / name)
        app.quit()

    QTimer.singleShot(500, grab)
    return cli.main([path])


if __name__ == "__main__":
    raise SystemExit(main())
