"""What the window's full garbage collections walk: its GC-tracked objects by type.

Runs the window of ``window_scale.py`` (16 GPUs x 1,024 processes over its own
sampler process, as the app runs) for a while, then counts ``gc.get_objects()``
by type -- every object a generation-2 collection visits -- and, for the most
numerous types, the types of the objects that hold them (one pass over every
tracked object's referents). Issue 28: the longest event-loop stall at
16 x 1,024 is the window's longest full collection, whose cost grows with this
count.

    QT_QPA_PLATFORM=offscreen python bench/gc_census.py [--size 16x1024] [--at 11]
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import window_scale  # noqa: E402


def _name(obj) -> str:
    kind = type(obj)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def full_collection_ms(tries: int = 5) -> tuple[float, float]:
    """(best, median) thread CPU time of a full collection, in ms: what a
    generation-2 collection costs the GUI thread for this many tracked objects."""
    took = []
    for _ in range(tries):
        t0 = time.thread_time()
        gc.collect()
        took.append((time.thread_time() - t0) * 1000)
    return min(took), statistics.median(took)


def census(top: int = 14, held_by: int = 8) -> None:
    best, median = full_collection_ms()
    print(f"a full collection: {best:.0f} ms thread CPU at best, median {median:.0f} ms (of 5)")
    objects = gc.get_objects()
    counts = collections.Counter(_name(o) for o in objects)
    print(f"{len(objects):,} GC-tracked objects in the window process; the most numerous:")
    for name, n in counts.most_common(top):
        print(f"  {n:>8,}  {name}")
    wanted = {name for name, _ in counts.most_common(top)}
    holders: dict[str, collections.Counter] = {name: collections.Counter() for name in wanted}
    for holder in objects:
        hname = None
        for ref in gc.get_referents(holder):
            rname = _name(ref)
            if rname in wanted:
                hname = hname or _name(holder)
                holders[rname][hname] += 1
    print("held by (referrer type: references):")
    for name, _ in counts.most_common(top):
        print(f"  {name}: " + ", ".join(f"{h} {n:,}" for h, n in holders[name].most_common(held_by)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="16x1024")
    ap.add_argument("--at", type=float, default=11.0, help="seconds after the window is built")
    a = ap.parse_args()
    from PySide6.QtCore import QTimer

    from vramscope.ui.window.app import create_app

    create_app()
    g, p = (int(x) for x in a.size.split("x"))
    QTimer.singleShot(int(a.at * 1000), census)
    window_scale.stalls(g, p, a.at + 1.0, 1.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
