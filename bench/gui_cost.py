"""What the window costs (issue 2 budgets; not a timed test).

    .venv/bin/python bench/gui_cost.py                 # all three figures
    .venv/bin/python bench/gui_cost.py --only idle --seconds 60

1. idle: `vramscope --demo` at 1 s sampling, offscreen, for --seconds
   (default 60): CPU time of the whole process (GUI thread + sampler thread,
   psutil cpu_times) over wall time, as % of one core. Budget < 2 %.
2. update: one plot update with 24 h of 1 s history for 2 GPUs x 10
   processes (store filled directly): append a frame, window.refresh(),
   repaint -> median ms. Budget <= 10 ms.
3. tick: the same at 10 Hz with 24 h of history for 8 GPUs x 64 processes
   -> per-tick ms (median, p95).

Filling 24 h: a store keeps the newest 7200 samples as they came and one
peak per 10 s bucket before that. So the first 22 h are appended one sample
per 10 s (the coarse tier ends up holding exactly what 1 s samples would
leave there) and the last 2 h one per second: same arrays, same sizes, a
fraction of the fill time.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "app"))

import psutil  # noqa: E402

from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo  # noqa: E402
from vramscope.core.store.store import Store  # noqa: E402
from vramscope.core.units import GiB, MiB  # noqa: E402

DAY = 86400
FINE = 7200


def _cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def idle_cost(seconds: float) -> dict:
    from PySide6.QtCore import QTimer

    from vramscope.ui.window.app import build_window, create_app

    app = create_app()
    args = argparse.Namespace(demo=True, seed=1, interval=1.0, window="10m", file=None)
    feed, window = build_window(args)
    window.resize(1400, 900)
    window.show()
    # let start-up (imports, first layout, first frames) settle before measuring
    QTimer.singleShot(3000, app.quit)
    app.exec()
    proc = psutil.Process()
    cpu0, wall0, passes0 = _cpu_seconds(proc), time.monotonic(), feed.sampler.passes
    QTimer.singleShot(int(seconds * 1000), app.quit)
    app.exec()
    cpu, wall = _cpu_seconds(proc) - cpu0, time.monotonic() - wall0
    passes = feed.sampler.passes - passes0
    feed.close()
    window.close()
    return {"cpu_percent": 100.0 * cpu / wall, "wall_s": wall, "frames": passes}


def _frame(t: float, gpus: int, procs: int, k: int) -> Frame:
    out = []
    for g in range(gpus):
        ps = []
        for p in range(procs):
            pid = 10000 + g * 1000 + p
            info = ProcessInfo(
                pid=pid, start_time=1000.0 + p, user="alice", name="python", cmdline=("python", f"job{p}.py")
            )
            used = (256 + 64 * p + (k * 7 + p * 13) % 97) * MiB
            ps.append(GpuProcess(pid=pid, used=used, sm=(k + p) % 100, info=info))
        used = sum(x.used for x in ps)
        out.append(
            GpuSample(
                index=g,
                name="NVIDIA H100 80GB HBM3",
                total=80 * GiB,
                used=used,
                free=80 * GiB - used,
                reserved=512 * MiB,
                util_gpu=k % 100,
                temperature=60,
                power_w=300.0,
                power_limit_w=700.0,
                processes=tuple(ps),
            )
        )
    return Frame(time=t, gpus=tuple(out), source="bench")


def filled_store(gpus: int, procs: int, end: float) -> Store:
    store = Store()
    t, k = end - DAY, 0
    while t < end - FINE:  # coarse part: one sample per 10 s bucket
        store.append(_frame(t, gpus, procs, k))
        t += 10.0
        k += 1
    t = end - FINE
    while t <= end:  # fine part: one per second
        store.append(_frame(t, gpus, procs, k))
        t += 1.0
        k += 1
    return store


def update_cost(gpus: int, procs: int, ticks: int, window: str, step: float, force: bool) -> dict:
    from vramscope.ui.window.app import create_app
    from vramscope.core.flow.pipeline import Pipeline
    from vramscope.ui.window.main_window import MainWindow

    app = create_app()
    end = time.time() - ticks * step
    t0 = time.perf_counter()
    store = filled_store(gpus, procs, end)
    fill_s = time.perf_counter() - t0

    class NoSource:  # the sampler is not started: frames come from the loop below
        name, simulated = "bench", False

        def sample(self, now):
            return Frame(time=now)

        def close(self):
            pass

    feed = Pipeline(NoSource(), store=store)
    window = MainWindow(feed, window=window, poll_ms=3_600_000)
    window.resize(1400, 900)
    window.show()
    window.refresh(force=True)
    app.processEvents()
    points = len(store.series(("gpu", 0, "used"))[0])
    times = []
    for i in range(ticks):
        store.append(_frame(end + (i + 1) * step, gpus, procs, 10**6 + i))
        t0 = time.perf_counter()
        window.refresh(force=force)  # force: a full redraw, whatever the throttles say
        window.repaint()  # paint now (offscreen backing store), not later
        times.append((time.perf_counter() - t0) * 1000)
    feed.close()
    window.close()
    times.sort()
    return {
        "median_ms": statistics.median(times),
        "p95_ms": times[int(0.95 * (len(times) - 1))],
        "max_ms": times[-1],
        "fill_s": fill_s,
        "points_per_series": points,
        "series": store.series_count(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("idle", "update", "tick"))
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--ticks", type=int, default=40)
    ap.add_argument("--no-antialias", action="store_true", help="compare: plots without antialiasing")
    a = ap.parse_args()
    if a.no_antialias:
        from vramscope.ui.qt import theme

        theme.ANTIALIAS = False
    from PySide6 import __version__ as pyside
    import pyqtgraph

    print(
        f"Python {sys.version.split()[0]}, PySide6 {pyside}, pyqtgraph {pyqtgraph.__version__}, "
        f"{psutil.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    if a.only in (None, "update"):
        for window in ("10m", "all"):
            r = update_cost(2, 10, a.ticks, window, 1.0, force=True)
            print(
                f"full update, 2 GPUs x 10 processes, 24 h history, window {window}: "
                f"median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms "
                f"({r['points_per_series']} points per series, {r['series']} series; "
                f"fill {r['fill_s']:.1f} s)"
            )
    if a.only in (None, "tick"):
        for window in ("10m", "all"):
            r = update_cost(8, 64, a.ticks, window, 0.1, force=False)
            print(
                f"10 Hz tick, 8 GPUs x 64 processes, 24 h history, window {window}: "
                f"median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms, "
                f"max {r['max_ms']:.1f} ms "
                f"({r['points_per_series']} points per series, {r['series']} series; "
                f"fill {r['fill_s']:.1f} s)"
            )
    if a.only in (None, "idle"):
        r = idle_cost(a.seconds)
        print(
            f"idle, --demo at 1 s for {r['wall_s']:.0f} s: {r['cpu_percent']:.2f} % of one core "
            f"({r['frames']} frames)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
