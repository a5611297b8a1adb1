"""Event-loop stalls of the live window on a big box: 16 GPUs x 1,024 processes.

The window (the real one: build_window, its pipeline sampling on its own
thread, diagnostics, panels) runs over a synthetic source for a while; a
10 ms timer on the GUI thread records how late each of its ticks fires. The
longest gap is the longest the user waits for a click or a repaint. Target
(issue 13): no stall over 100 ms at 16 x 1,024.

    QT_QPA_PLATFORM=offscreen python bench/window_scale.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo  # noqa: E402

GiB = 1 << 30
STARTUP_MS = 5000  # the first seconds (GPU rows built, first frames) are reported apart


class BigBox:
    """gpus x procs processes, each a training script holding a few GiB."""

    name, simulated = "bench", False

    def __init__(self, gpus: int, procs: int):
        self.gpus, self.procs = gpus, procs
        self.k = 0
        self.infos = [[ProcessInfo(pid=100_000 + g * procs + p, start_time=1.7e9 + p,
                                   user=f"user{p % 40}", name="python",
                                   cmdline=("python", f"train_{g}_{p}.py", "--lr", "3e-4"))
                       for p in range(procs)] for g in range(gpus)]

    def sample(self, now: float) -> Frame:
        self.k += 1
        gpus = []
        for g in range(self.gpus):
            procs = tuple(GpuProcess(pid=info.pid, used=(1 + (p + self.k) % 7) * (GiB // 64),
                                     sm=(p * 7 + self.k) % 100, info=info)
                          for p, info in enumerate(self.infos[g]))
            used = sum(p.used for p in procs)
            gpus.append(GpuSample(index=g, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{g:04d}",
                                  total=80 * GiB, used=used, free=80 * GiB - used,
                                  util_gpu=50, temperature=60, power_w=300.0,
                                  power_limit_w=700.0, processes=procs))
        return Frame(time=now, gpus=tuple(gpus), driver_version="550.54.14")

    def close(self) -> None:
        pass


def stalls(gpus: int, procs: int, seconds: float, interval: float) -> dict:
    from PySide6.QtCore import QElapsedTimer, QTimer

    from vramscope.ui.app import build_window, create_app

    app = create_app()
    args = argparse.Namespace(demo=False, interval=interval, window="10m", record=False,
                              read_only=True, prometheus=None, file=None, host=None)
    t0 = time.perf_counter()
    feed, window = build_window(args, source=BigBox(gpus, procs))
    window.resize(1400, 900)
    window.show()
    build_s = time.perf_counter() - t0
    clock = QElapsedTimer()
    clock.start()
    gaps: list[float] = []  # after the first STARTUP_MS (the rows are built, history fills)
    startup: list[float] = []
    last = [clock.elapsed()]

    def tick():
        now = clock.elapsed()
        (gaps if now > STARTUP_MS else startup).append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(10)
    QTimer.singleShot(int(seconds * 1000), app.quit)
    app.exec()
    timer.stop()
    passes = feed.sampler.passes
    window.services.close()
    window.close()
    gaps.sort()
    return {"max_ms": gaps[-1] if gaps else float("nan"),
            "p99_ms": gaps[int(0.99 * (len(gaps) - 1))] if gaps else float("nan"),
            "median_ms": statistics.median(gaps) if gaps else float("nan"),
            "over_100": sum(g > 100 for g in gaps), "ticks": len(gaps), "passes": passes,
            "build_s": build_s, "startup_max_ms": max(startup, default=float("nan"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--sizes", default="16x256,16x1024")
    a = ap.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}; sampling every {a.interval:g} s for {a.seconds:g} s")
    for size in a.sizes.split(","):
        g, p = (int(x) for x in size.split("x"))
        r = stalls(g, p, a.seconds, a.interval)
        print(f"{g} GPUs x {p} processes, after the first {STARTUP_MS / 1000:g} s: longest event-loop stall {r['max_ms']:.0f} ms, "
              f"p99 {r['p99_ms']:.0f} ms, median {r['median_ms']:.0f} ms, "
              f"{r['over_100']} of {r['ticks']} ticks over 100 ms "
              f"({r['passes']} sampling passes; window built in {r['build_s']:.1f} s; "
              f"longest in the first {STARTUP_MS / 1000:g} s: {r['startup_max_ms']:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
