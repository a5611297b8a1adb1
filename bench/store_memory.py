"""Memory of the store over a simulated day, and the cost of reading a day back.

Feeds a Store 24 h of 1 s frames as fast as it can take them (no waiting)
and prints how much the process grew (psutil RSS), the store's own array
bytes (store.nbytes) and the cost of store.series() on a 24 h series.

Scenarios:
  demo    the demo workstation (sources/demo/simulated.py): 2 GPUs, processes
          that come and go (a new short job every 2 min, restarts)
  2x10    2 GPUs x 10 steady processes  (budget: RSS growth < 100 MB)
  8x64    8 GPUs x 64 steady processes

    .venv/bin/python bench/store_memory.py              # all three, 24 h
    .venv/bin/python bench/store_memory.py 2x10 --hours 2
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

import psutil

from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import Store, gpu_key
from vramscope.core.units import GiB, MiB

T0 = 1_700_000_000.0
VARIANTS = 16  # distinct values per process, cycled (values do not change the memory)


def steady_frames(gpus: int, procs: int, seconds: int):
    """Frames of `gpus` GPUs with `procs` processes each, built from a small pool."""
    pool = []  # pool[v][g] = tuple of GpuProcess
    for v in range(VARIANTS):
        per_gpu = []
        for g in range(gpus):
            per_gpu.append(
                tuple(
                    GpuProcess(
                        pid=10_000 + g * 1000 + p,
                        used=(256 + 37 * p + 13 * v) * MiB,
                        sm=(p * 7 + v) % 100,
                        info=ProcessInfo(pid=10_000 + g * 1000 + p, start_time=T0 - 3600),
                    )
                    for p in range(procs)
                )
            )
        pool.append(per_gpu)
    for i in range(seconds):
        v = i % VARIANTS
        yield Frame(
            time=T0 + i,
            source="bench",
            gpus=tuple(
                GpuSample(
                    index=g,
                    total=80 * GiB,
                    used=(20 + v) * GiB,
                    free=(60 - v) * GiB,
                    reserved=512 * MiB,
                    util_gpu=50 + v,
                    temperature=60,
                    power_w=250.0,
                    processes=pool[v][g],
                )
                for g in range(gpus)
            ),
        )


def demo_frames(seconds: int):
    from vramscope.sources.demo.simulated import SimulatedSource

    src = SimulatedSource(seed=1, start_time=T0)
    for i in range(seconds):
        yield src.sample(T0 + i)


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def median_us(fn, repeat: int = 21) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def run(name: str, frames, seconds: int) -> dict:
    before = rss()
    store = Store()
    t0 = time.perf_counter()
    n = 0
    for frame in frames:
        store.append(frame)
        n += 1
    feed_s = time.perf_counter() - t0
    grown = rss() - before
    now = T0 + seconds
    some_proc = next(k for k in store.keys(("proc",)))
    read_gpu_all = median_us(lambda: store.series(gpu_key(0, "used")))
    read_gpu_hour = median_us(lambda: store.series(gpu_key(0, "used"), since=now - 3600))
    read_proc_all = median_us(lambda: store.series(some_proc))
    points = len(store.series(gpu_key(0, "used"))[0])
    all_keys = store.keys()
    read_every = median_us(lambda: [store.series(k) for k in all_keys], repeat=3)
    return {
        "name": name,
        "frames": n,
        "series": store.series_count(),
        "rss_mb": grown / 1e6,
        "nbytes_mb": store.nbytes / 1e6,
        "feed_s": feed_s,
        "append_us": feed_s / max(1, n) * 1e6,
        "points": points,
        "read_all_us": read_gpu_all,
        "read_hour_us": read_gpu_hour,
        "read_proc_us": read_proc_all,
        "read_every_ms": read_every / 1e3,
    }


SCENARIOS = {
    "demo": lambda s: demo_frames(s),
    "2x10": lambda s: steady_frames(2, 10, s),
    "8x64": lambda s: steady_frames(8, 64, s),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="demo, 2x10, 8x64 (default: all)")
    p.add_argument("--hours", type=float, default=24.0)
    p.add_argument("--row-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario {unknown[0]!r}; choose from {', '.join(SCENARIOS)}")
    args.scenarios = args.scenarios or list(SCENARIOS)
    seconds = int(args.hours * 3600)
    if not args.row_only:
        print(
            f"python {sys.version.split()[0]}, {args.hours:g} h at 1 s = {seconds} frames "
            f"per scenario, each in a fresh process; Store() defaults"
        )
        print(
            f"{'scenario':8} {'series':>6} {'RSS grew':>10} {'nbytes':>10} {'feed':>8} "
            f"{'append':>9} {'pts':>6} {'series()':>9} {'last 1 h':>9} {'1 proc':>8} "
            f"{'all series':>10}"
        )
    over = False
    for name in args.scenarios:
        if len(args.scenarios) > 1:  # each in a fresh process, so RSS figures do not mix
            import subprocess

            out = subprocess.run(
                [sys.executable, __file__, name, "--hours", str(args.hours), "--row-only"],
                capture_output=True,
                text=True,
            )
            print(out.stdout, end="", flush=True)
            sys.stderr.write(out.stderr)
            over |= out.returncode != 0
            continue
        r = run(name, SCENARIOS[name](seconds), seconds)
        print(
            f"{r['name']:8} {r['series']:6d} {r['rss_mb']:7.1f} MB {r['nbytes_mb']:7.1f} MB "
            f"{r['feed_s']:6.1f} s {r['append_us']:6.0f} us {r['points']:6d} "
            f"{r['read_all_us']:6.0f} us {r['read_hour_us']:6.0f} us "
            f"{r['read_proc_us']:5.0f} us {r['read_every_ms']:7.1f} ms",
            flush=True,
        )
        if name == "2x10" and r["rss_mb"] >= 100:
            over = True
    if args.row_only:
        return 1 if over else 0
    print(
        "series(): median of one whole GPU series (coarse peaks + raw tail), the last hour, "
        "one process series; 'all series': every series once (a full redraw)"
    )
    if over:
        print("BUDGET MISSED: 2 GPUs x 10 processes grew >= 100 MB")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
