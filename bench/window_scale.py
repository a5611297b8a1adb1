"""Event-loop stalls of the live window on a big box: 16 GPUs x 1,024 processes.

The window (the real one: build_window, its pipeline sampling on its own
thread, diagnostics, panels) runs over a synthetic source for a while; a
10 ms timer on the GUI thread records how late each of its ticks fires. The
longest gap is the longest the user waits for a click or a repaint. Target
(issue 13): no stall over 100 ms at 16 x 1,024; issue 28: over 50 ms,
including the first 5 s, with the box sampled by a process of its own (as
the app does: sources/remote/local_sampler.py; ``--in-process`` for the old way),
the sampler keeping its 1 s grid, the first frame on screen within 0.5 s
(the GPUs, from the sampler's first look; the time to the processes is printed
beside it).

    QT_QPA_PLATFORM=offscreen python bench/window_scale.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import gc
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
        self.infos = [
            [
                ProcessInfo(
                    pid=100_000 + g * procs + p,
                    start_time=1.7e9 + p,
                    user=f"user{p % 40}",
                    name="python",
                    cmdline=("python", f"train_{g}_{p}.py", "--lr", "3e-4"),
                )
                for p in range(procs)
            ]
            for g in range(gpus)
        ]

    def sample(self, now: float, devices_only: bool = False) -> Frame:
        self.k += 1
        gpus = []
        for g in range(self.gpus):
            procs = tuple(
                GpuProcess(
                    pid=info.pid,
                    used=(1 + (p + self.k) % 7) * (GiB // 64),
                    sm=(p * 7 + self.k) % 100,
                    info=info,
                )
                for p, info in enumerate(() if devices_only else self.infos[g])
            )
            used = sum(p.used for p in procs) if procs else self.procs * 4 * (GiB // 64)
            gpus.append(
                GpuSample(
                    index=g,
                    name="NVIDIA H100 80GB HBM3",
                    uuid=f"GPU-{g:04d}",
                    total=80 * GiB,
                    used=used,
                    free=80 * GiB - used,
                    util_gpu=50,
                    temperature=60,
                    power_w=300.0,
                    power_limit_w=700.0,
                    processes=procs,
                    processes_pending=devices_only,
                )
            )
        return Frame(time=now, gpus=tuple(gpus), driver_version="550.54.14")

    def sample_devices(self, now: float) -> Frame:
        """The GPUs alone, as NvmlSource.sample_devices gives them (the stream's first look)."""
        return self.sample(now, devices_only=True)

    def close(self) -> None:
        pass


def serve(size: str, interval: float) -> int:
    """The sampler process of the window under test: `vramscope stream` over a BigBox."""
    from vramscope.commands.stream import run_stream

    g, p = (int(x) for x in size.split("x"))
    code = run_stream(BigBox(g, p), interval=interval, enrichers=None, devices_first=True)
    os._exit(code)


def sampler_source(gpus: int, procs: int, interval: float):
    from vramscope.sources.remote.local_sampler import LocalSamplerSource

    source = LocalSamplerSource([], interval, name=BigBox.name)
    source.process.argv = lambda _command: [
        sys.executable,
        os.path.abspath(__file__),
        "--serve",
        f"{gpus}x{procs}",
        "--interval",
        f"{interval:g}",
    ]
    sent = source.sent = []  # the sampler's time of each frame as it reaches the window's reader
    handle = source.process._handle

    def _handle(message, frames):
        kind = message.get("type")
        if kind in ("frame", "delta"):
            t = message.get("time") if kind == "delta" else (message.get("frame") or {}).get("time")
            if isinstance(t, float):
                sent.append(t)
        handle(message, frames)

    source.process._handle = _handle
    return source.start()


def stalls(
    gpus: int,
    procs: int,
    seconds: float,
    interval: float,
    apart: bool = True,
    freeze: bool = True,
    held_paint: bool = True,
) -> dict:
    from PySide6.QtCore import QElapsedTimer, QTimer

    from vramscope.core.store.store import STAGE_RECORDER
    from vramscope.ui.window.app import build_window, create_app, freeze_startup_heap
    from vramscope.ui.qt.gil_held_paint import GilHeldPaintWindow

    if not held_paint and "event" in vars(GilHeldPaintWindow):  # as before round fifteen
        del GilHeldPaintWindow.event

    app = create_app()
    args = argparse.Namespace(
        demo=False,
        interval=interval,
        window="10m",
        record=False,
        read_only=True,
        prometheus=None,
        file=None,
        host=None,
    )
    t0 = time.perf_counter()
    source = sampler_source(gpus, procs, interval) if apart else BigBox(gpus, procs)
    feed, window = build_window(args, source=source)
    times: list[float] = []  # the sampler's time of each frame the window got (not its first look)
    feed.subscribe(
        lambda frame: (
            times.append(frame.time)
            if frame.gpus and not frame.error and not any(g.processes_pending for g in frame.gpus)
            else None
        ),
        STAGE_RECORDER,
    )
    window.resize(1400, 900)
    if freeze:  # as the app does (ui/window/app.py run): the start-up heap out of every full collection
        freeze_startup_heap()
    window.show()
    build_s = time.perf_counter() - t0
    clock = QElapsedTimer()
    clock.start()
    first = []  # the first frame on screen: the GPUs (their processes may still be read)
    whole = []  # the first frame with its processes on screen
    window.new_frame.connect(
        lambda frame: first.append(clock.elapsed()) if frame.gpus and not first else None
    )
    window.new_frame.connect(
        lambda frame: (
            whole.append(clock.elapsed())
            if frame.gpus and not whole and not any(g.processes_pending for g in frame.gpus)
            else None
        )
    )
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
    pauses: list[float] = []  # the window's garbage collections (each holds the GIL throughout)
    fulls: list[float] = []  # the full (generation 2) ones: they walk every tracked object
    full_at: list[float] = []  # when each full one ended, ms after show()
    began = [0.0]

    def collected(phase, info):
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - began[0]) * 1e3)
            if info["generation"] == 2:
                fulls.append(pauses[-1])
                full_at.append(clock.elapsed())

    gc.callbacks.append(collected)
    cpu0 = time.process_time()
    app.exec()
    cpu_s = time.process_time() - cpu0
    gc.callbacks.remove(collected)
    timer.stop()
    passes = len(times)
    steps = [b - a for a, b in zip(times, times[1:])]
    sent = getattr(source, "sent", [])
    sent_steps = [b - a for a, b in zip(sent, sent[1:])]
    window.services.close()
    window.close()
    gaps.sort()
    return {
        "max_ms": gaps[-1] if gaps else float("nan"),
        "p99_ms": gaps[int(0.99 * (len(gaps) - 1))] if gaps else float("nan"),
        "median_ms": statistics.median(gaps) if gaps else float("nan"),
        "over_100": sum(g > 100 for g in gaps),
        "ticks": len(gaps),
        "passes": passes,
        "build_s": build_s,
        "startup_max_ms": max(startup, default=float("nan")),
        "first_ms": first[0] if first else float("nan"),
        "whole_ms": whole[0] if whole else float("nan"),
        "grid_worst_s": max(steps, default=float("nan")),
        "sent_worst_s": max(sent_steps, default=float("nan")),
        "over_50": sum(g > 50 for g in gaps + startup),
        "window_cpu": cpu_s / seconds,  # the window process's CPU (all its threads), cores
        "gc_max_ms": max(pauses, default=0.0),
        "gc_over_20": sum(p > 20 for p in pauses),
        "gc_full": len(fulls),
        "gc_full_startup": sum(t <= STARTUP_MS for t in full_at),
        "gc_full_startup_max_ms": max((f for f, t in zip(fulls, full_at) if t <= STARTUP_MS), default=0.0),
        "gc_full_median_ms": statistics.median(fulls) if fulls else float("nan"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--sizes", default="16x256,16x1024")
    ap.add_argument(
        "--in-process", action="store_true", help="sample in the window's process (before issue 28)"
    )
    ap.add_argument(
        "--no-freeze",
        action="store_true",
        help="leave the start-up heap in the collector's generations (before round sixteen)",
    )
    ap.add_argument(
        "--plain-paint",
        action="store_true",
        help="paint from the event loop, the GIL taken per call (before round fifteen)",
    )
    ap.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        return serve(a.serve, a.interval)
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}; sampling every {a.interval:g} s for {a.seconds:g} s"
    )
    for size in a.sizes.split(","):
        g, p = (int(x) for x in size.split("x"))
        r = stalls(
            g,
            p,
            a.seconds,
            a.interval,
            apart=not a.in_process,
            freeze=not a.no_freeze,
            held_paint=not a.plain_paint,
        )
        print(
            f"{g} GPUs x {p} processes, after the first {STARTUP_MS / 1000:g} s: longest event-loop stall {r['max_ms']:.0f} ms, "
            f"p99 {r['p99_ms']:.0f} ms, median {r['median_ms']:.0f} ms, "
            f"{r['over_100']} of {r['ticks']} ticks over 100 ms "
            f"({r['passes']} sampling passes; window built in {r['build_s']:.1f} s; "
            f"longest in the first {STARTUP_MS / 1000:g} s: {r['startup_max_ms']:.0f} ms; "
            f"{r['over_50']} ticks over 50 ms in all; first frame on screen "
            f"{r['first_ms']:.0f} ms after show(), with its processes {r['whole_ms']:.0f} ms; widest step between frames received "
            f"{r['grid_worst_s']:.2f} s (as the sampler sent them: {r['sent_worst_s']:.2f} s); the window process used {100 * r['window_cpu']:.0f} % of a core; "
            f"its longest garbage collection {r['gc_max_ms']:.0f} ms, {r['gc_over_20']} over 20 ms, "
            f"{r['gc_full']} full ones (median {r['gc_full_median_ms']:.0f} ms), {r['gc_full_startup']} of them in "
            f"the first {STARTUP_MS / 1000:g} s (longest {r['gc_full_startup_max_ms']:.0f} ms); "
            f"load {os.getloadavg()[0]:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
