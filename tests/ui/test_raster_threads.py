"""The window's painting stays on its own thread (ui/qt/raster_threads.py): Qt's
raster engine would hand each large fill to a pool of threads and wait for
them, which costs more CPU than the fill at the window's sizes. The pixels
are the same either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PAINT = """
import hashlib, json, math, os, sys
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath
if sys.argv[1] == "app":
    from vramscope.ui.window.app import create_app
    create_app()
else:
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
image = QImage(1400, 400, QImage.Format.Format_ARGB32_Premultiplied)
image.fill(0)
band = QPainterPath()
band.moveTo(0, 400)
for x in range(0, 1400, 2):
    band.lineTo(x, 200 + 150 * math.sin(x / 50))
band.lineTo(1400, 400)
band.closeSubpath()
threads = len(os.listdir("/proc/self/task"))
for _ in range(5):
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.fillPath(band, QColor(10, 100, 200, 120))
    painter.end()
print(json.dumps({"new_threads": len(os.listdir("/proc/self/task")) - threads,
                  "pixels": hashlib.sha256(bytes(image.constBits())).hexdigest()}))
"""


def paint(how: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "QT_NO_GUI_THREADPOOL"}
    env["QT_QPA_PLATFORM"] = "offscreen"
    out = subprocess.run(
        [sys.executable, "-c", PAINT, how], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_windows_fills_start_no_threads_and_draw_the_same_pixels():
    ours, qts = paint("app"), paint("plain")
    assert qts["new_threads"] >= 1  # Qt's own default: a pool for the big fill
    assert ours["new_threads"] == 0
    assert ours["pixels"] == qts["pixels"]
