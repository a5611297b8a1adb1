"""Start-up time: from process start to the window painted, and to the first
frame of data painted, for `vramscope --demo` (offscreen).

    .venv/bin/python bench/startup.py             # 5 fresh processes, medians
    .venv/bin/python bench/startup.py --runs 10 --no-demo   # the NVML path (no GPU: the
                                                             # "no driver" page is the frame)

Each run is a fresh interpreter started by this script (the clock starts just
before it is spawned, so interpreter start-up and every import count). The
child runs the real command line, ``vramscope.cli.main(["--demo"])``; the only
thing added is a hook on ``QApplication.exec`` (installed before anything
else) that watches paint events from inside the event loop:

- *window*: the first paint of the main window (whatever it shows);
- *first frame*: the first paint of a GPU card or of the no-driver page --
  the moment the user sees data (or the answer that there is none).

It also reports, inside the child, when the sampler stored its first frame
and how long the imports before the window took, to show what blocks.
Target (issue 7 / DESIGN.md): first frame < 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, os, sys, time
T0 = float(os.environ["VRAMSCOPE_BENCH_T0"])
marks = {"interpreter": time.time() - T0}
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication
marks["import PySide6"] = time.time() - T0

class Watch(QObject):
    def __init__(self, app):
        super().__init__()
        self.app = app
        self.window = None
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            now = time.time() - T0
            w = self.window or self._find_window()
            if w is not None:
                if "window painted" not in marks and (obj is w or w.isAncestorOf(obj)):
                    marks["window painted"] = now
                page = w.pages.currentWidget() if hasattr(w, "pages") else None
                cards = getattr(getattr(w, "gpu_panel", None), "cards", {})
                shown = [c for c in cards.values()] + ([w.no_driver] if page is getattr(w, "no_driver", None) else [])
                if any(obj is c or c.isAncestorOf(obj) for c in shown):
                    marks.setdefault("first frame painted", now)
                    QTimer.singleShot(0, self.app.quit)
        return False
    def _find_window(self):
        for w in self.app.topLevelWidgets():
            if type(w).__name__ == "MainWindow":
                self.window = w
                return w
        return None

_exec = QApplication.exec
def exec_(self, *a):
    marks["event loop"] = time.time() - T0
    watch = Watch(self)
    self.installEventFilter(watch)
    self._bench_watch = watch
    QTimer.singleShot(15000, self.quit)  # never hang the bench
    return _exec()
QApplication.exec = exec_

# when the sampler stores its first frame (its thread)
from vramscope.core.store import store as store_mod
_append = store_mod.Store.append
def append(self, frame):
    marks.setdefault("first frame stored", time.time() - T0)
    return _append(self, frame)
store_mod.Store.append = append
marks["import vramscope.core"] = time.time() - T0

from vramscope.cli import main
rc = main(sys.argv[1:])
print("BENCH " + json.dumps({"rc": rc, "marks": marks, "modules": sorted(sys.modules)}))
"""

ORDER = (
    "interpreter",
    "import PySide6",
    "import vramscope.core",
    "event loop",
    "window painted",
    "first frame stored",
    "first frame painted",
)


def one_run(args: list[str]) -> dict:
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    t0 = time.time()
    env["VRAMSCOPE_BENCH_T0"] = repr(t0)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, timeout=60
    )
    line = next((out for out in done.stdout.splitlines() if out.startswith("BENCH ")), None)
    if line is None:
        raise SystemExit(f"the child failed (rc {done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(line[6:])
    result["total"] = time.time() - t0
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-demo", action="store_true", help="the NVML source instead of the demo")
    opts = p.parse_args()
    args = [] if opts.no_demo else ["--demo"]
    one_run(args)  # warm the page cache; not counted
    runs = [one_run(args) for _ in range(opts.runs)]
    print(
        f"vramscope {' '.join(args)} offscreen, {opts.runs} fresh processes "
        f"(Python {sys.version.split()[0]}), seconds since the process was spawned:"
    )
    print(f"{'mark':24s} {'median':>8s} {'min':>8s} {'max':>8s}")
    for mark in ORDER:
        values = [r["marks"].get(mark) for r in runs]
        values = [v for v in values if v is not None]
        if not values:
            print(f"{mark:24s} {'—':>8s}")
            continue
        print(f"{mark:24s} {statistics.median(values):8.3f} {min(values):8.3f} {max(values):8.3f}")
    heavy = [m for m in ("torch", "pandas", "scipy", "matplotlib", "IPython") if m in runs[-1]["modules"]]
    print("heavy modules imported during start-up: " + (", ".join(heavy) or "none"))
    target = statistics.median(r["marks"].get("first frame painted", float("inf")) for r in runs)
    print(
        f"first frame painted, median {target:.3f} s: "
        + ("within the 2 s target" if target < 2.0 else "OVER the 2 s target")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
