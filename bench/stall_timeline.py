"""What the window's threads were doing around each event-loop stall.

Runs the window of ``window_scale.py`` (16 GPUs x 1,024 processes over its own
sampler process, as the app runs) and times, on whatever thread runs them, the
steps a frame goes through in the window: the reader decoding the sampler's
lines, turning a message into a frame, the store appending it, the GUI thread's
refresh, the table asked for, built on its worker and shown. A 10 ms timer on
the GUI thread finds the stalls (a tick later than ``--over`` ms, after the
first ``--after`` s); each is printed with the steps that ran in the second
before it and during it. The start-up heap is frozen first, as the app does
(``--no-freeze``: not, as before round sixteen).

    QT_QPA_PLATFORM=offscreen python bench/stall_timeline.py [--seconds 150]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import window_scale  # noqa: E402

T0 = time.perf_counter()
STEPS: list[tuple[float, float, str]] = []  # (start, end, what), seconds since T0


def _timed(cls, name: str, what: str) -> None:
    run = getattr(cls, name)

    def timed(*args, **kwargs):
        began = time.perf_counter()
        try:
            return run(*args, **kwargs)
        finally:
            STEPS.append((began - T0, time.perf_counter() - T0, what))

    setattr(cls, name, timed)


def _time_the_steps() -> None:
    from vramscope.core.processes.process_rows import TableBuilder
    from vramscope.core.store.store import Store
    from vramscope.core.stream.protocol import LineDecoder
    from vramscope.sources.remote.host_stream import RemoteHost
    from vramscope.ui.window.main_window import MainWindow
    from vramscope.ui.processes.process_table import ProcessTable

    _timed(LineDecoder, "feed", "decode (reader)")
    _timed(RemoteHost, "_handle", "to a frame (reader)")
    _timed(Store, "append", "store (pipeline)")
    _timed(MainWindow, "refresh", "refresh (GUI)")
    _timed(ProcessTable, "show_frame", "table asked (GUI)")
    _timed(TableBuilder, "build", "table built (worker)")
    _timed(ProcessTable, "show_table", "table shown (GUI)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="16x1024")
    ap.add_argument("--seconds", type=float, default=150.0)
    ap.add_argument("--over", type=float, default=45.0, help="a stall: a tick this many ms late or more")
    ap.add_argument("--after", type=float, default=8.0, help="seconds after the start")
    ap.add_argument(
        "--no-freeze", action="store_true", help="the start-up heap not frozen (window_scale.py --no-freeze)"
    )
    a = ap.parse_args()
    from PySide6.QtCore import QTimer

    from vramscope.ui.window.app import create_app

    _time_the_steps()
    create_app()
    stalls: list[tuple[float, float]] = []
    last = [None]

    def tick():
        now = time.perf_counter() - T0
        if last[0] is not None and now - last[0] > a.over / 1000 and now > a.after:
            stalls.append((last[0], now))
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(10)
    g, p = (int(x) for x in a.size.split("x"))
    r = window_scale.stalls(g, p, a.seconds, 1.0, freeze=not a.no_freeze)
    print(
        f"{g} x {p}, {a.seconds:g} s: longest stall after 5 s {r['max_ms']:.0f} ms, "
        f"longest garbage collection {r['gc_max_ms']:.0f} ms"
    )
    for began, ended in stalls:
        print(f"stall {began:8.3f} -> {ended:8.3f} s ({1000 * (ended - began):.0f} ms); the steps around it:")
        for start, end, what in STEPS:
            if end > began - 1.0 and start < ended and end - start >= 0.0005:
                print(f"    {start:8.3f} -> {end:8.3f}  {1000 * (end - start):6.1f} ms  {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
