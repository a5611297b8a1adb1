"""The snapshot viewer on a big file: time to the first picture and the cursor's step.

    .venv/bin/python bench/snapshot_viewer.py FILE.pickle [--steps 50]

Budgets (issue 48): the window's first picture within 1.5x a bare
``pickle.load`` of the file; the cursor at most 50 ms a step. The window is
the real one (ui/snapshot/window.py) on Qt's offscreen platform; "first
picture" is from asking it to open the file to the timeline, what was alive
at the peak and the segment map drawn (events processed, the window grabbed).
A step is one move of the cursor by a drawn point (the arrow key) up to what
was alive redrawn; the segment map, redrawn once the cursor rests, is timed
on its own. The bare ``pickle.load`` runs in a fresh
process beside it, so both are measured on the same machine in one run.
Make a file with ``bench/snapshot_load.py --events N --keep FILE`` (or, of any
size, ``bench/snapshot_stream.py``). The window's peak RSS (this process's
``VmHWM``, Qt and all) is printed against the file's size and the bare load's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


# a bare pickle.load in a fresh process, saying its own peak RSS (VmHWM) as it ends
BARE = (
    "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))\n"
    "for line in open('/proc/self/status'):\n"
    "    if line.startswith('VmHWM:'): print('VMHWM', line.split()[1], file=sys.stderr)"
)


def _own_peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", BARE, args.file], check=True, stderr=subprocess.PIPE, text=True
    )
    bare = time.perf_counter() - t0
    bare_rss = int(done.stderr.split("VMHWM")[-1].split()[0]) * 1024

    from PySide6.QtWidgets import QApplication

    from vramscope.ui.window.app import create_app
    from vramscope.ui.snapshot.window import SnapshotWindow

    app = create_app(theme_mode="dark")
    window = SnapshotWindow()
    window.show()
    t0 = time.perf_counter()
    window.open_path(args.file)
    while (
        window.alive.topLevelItemCount() == 0 or not window.segment_map.isVisible()
    ) and window.error is None:
        QApplication.processEvents()
        time.sleep(0.002)
    window.grab()
    first = time.perf_counter() - t0
    first_rss = _own_peak_rss()
    steps, maps = [], []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        window.step_cursor(1)  # the arrow key: the cursor moves, the coalescing timer is started
        while window._pending.isActive():
            QApplication.processEvents()
        QApplication.processEvents()
        steps.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        window._map_pending.stop()
        window._show_segments()  # what runs once the cursor rests
        QApplication.processEvents()
        maps.append((time.perf_counter() - t0) * 1000)
    size = os.path.getsize(args.file) / (1 << 20)
    print(f"{args.file}: {size:.0f} MiB, {len(window.replay.trace):,} trace entries")
    print(f"bare pickle.load (a fresh process): {bare:.1f} s, peak RSS {bare_rss / (1 << 20):.0f} MiB")
    print(
        f"window's first picture: {first:.1f} s = {first / bare:.2f}x the bare load (read by: {window.snap.reader})"
    )
    print(
        f"window's peak RSS at its first picture: {first_rss / (1 << 20):.0f} MiB = {first_rss / (1 << 20) / size:.2f}x "
        f"the file, {first_rss / bare_rss:.2f}x the bare load's"
    )
    print(
        f"cursor step: median {statistics.median(steps):.1f} ms, max {max(steps):.1f} ms ({len(steps)} steps)"
    )
    print(
        f"segment map once the cursor rests: median {statistics.median(maps):.1f} ms, max {max(maps):.1f} ms"
    )
    app.quit()


if __name__ == "__main__":
    main()
