"""Session recording, reopening and export costs (issue 5 budgets).

    .venv/bin/python bench/session_bench.py [--hours 24] [--gpus 8] [--procs 50]

Prints:
- recording cost per tick: SessionWriter.on_frame for a frame of GPUS x PROCS
  (the work the sampler thread does in addition to sampling);
- session file size per hour at 1 s;
- time to first frame when reopening (open + load_into_store);
- exporting the whole session to CSV and to a Perfetto trace JSON (budget <= 10 s each).

The long session is synthesised straight into the file format (building 35
million frozen samples in Python would take longer than the thing measured);
the recording cost is measured through the real writer. Synthetic process
memory is piecewise constant (it changes on ~2 % of ticks, as NVML figures
for a caching allocator do), two processes per GPU are busy (SM % every
tick), and a quarter of the processes are replaced every 6 hours.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sqlite3
import sys
import tempfile
import time

import numpy as np

from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.session import SessionWriter, load_into_store, open_session
from vramscope.core.session.schema import ROLLUP_STEP
from vramscope.core.export import export_csv, export_trace
from vramscope.core.units import GiB, MiB


def _frame(t: float, gpus: int, procs: int, rng) -> Frame:
    out = []
    for g in range(gpus):
        plist = tuple(
            GpuProcess(
                pid=10000 + g * 1000 + i,
                used=int(rng.integers(1, 4000)) * MiB,
                sm=int(rng.integers(0, 100)) if i < 2 else None,
                info=ProcessInfo(
                    pid=10000 + g * 1000 + i,
                    start_time=1.0e9 + i,
                    user="bench",
                    name="python3",
                    cmdline=("python3", f"job{i}.py"),
                ),
            )
            for i in range(procs)
        )
        out.append(
            GpuSample(
                index=g,
                name="Synthetic GPU",
                uuid=f"GPU-{g:04d}",
                total=80 * GiB,
                used=sum(p.used for p in plist),
                free=1 * GiB,
                reserved=512 * MiB,
                util_gpu=int(rng.integers(0, 100)),
                util_memory=30,
                temperature=60,
                power_w=250.5,
                power_limit_w=400.0,
                processes=plist,
            )
        )
    return Frame(time=t, gpus=tuple(out), source="bench", simulated=True)


def bench_record(gpus: int, procs: int, ticks: int = 300) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    frames = [_frame(1.7e9 + k, gpus, procs, rng) for k in range(ticks)]
    with tempfile.TemporaryDirectory() as d:
        w = SessionWriter(pathlib.Path(d) / "r.vramscope", commit_every=1.0)
        t0 = time.perf_counter()
        for f in frames:
            w.on_frame(f)
            w.flush()  # one commit per tick, as at the default 1 s interval
        per_tick = (time.perf_counter() - t0) / ticks
        w.close()
        size = os.path.getsize(pathlib.Path(d) / "r.vramscope")
    return per_tick, size / ticks * 3600


def synthesise(path: pathlib.Path, hours: float, gpus: int, procs: int) -> None:
    """Write a session of the given size straight into the file format."""
    rng = np.random.default_rng(7)
    w = SessionWriter(path, meta={"source": "bench", "simulated": True})
    w.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    n = int(hours * 3600)
    t0 = 1.7e9
    gen_every = 6 * 3600
    generations = n // gen_every + 1
    # process ids: (gpu, slot, generation)
    ident = {}
    rows = []
    for g in range(gpus):
        for s in range(procs):
            for gen in range(generations if s < procs // 4 else 1):
                pid_id = len(ident) + 1
                ident[(g, s, gen)] = pid_id
                rows.append(
                    (
                        pid_id,
                        20000 + len(ident),
                        t0 + gen * gen_every - 3600.0,
                        "bench",
                        "python3",
                        f"python3 job{s}.py --gen {gen}",
                        1,
                        t0 + gen * gen_every,
                    )
                )
    db.executemany(
        "INSERT INTO processes (id, pid, start_time, user, name, command, ppid, "
        "first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.executemany(
        "INSERT INTO gpus (gpu, name, uuid, pci_bus_id) VALUES (?, ?, ?, ?)",
        [(g, "Synthetic GPU", f"GPU-{g:04d}", f"0000:{g:02x}:00.0") for g in range(gpus)],
    )
    step = 3600
    for c0 in range(0, n, step):
        k = np.arange(c0, min(n, c0 + step))
        t = t0 + k
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO frames VALUES (?, 'bench', 1, NULL, NULL, NULL, NULL)", [(float(x),) for x in t]
        )
        grows, prows, grr, prr = [], [], [], []
        for g in range(gpus):
            gen = k // gen_every
            # piecewise-constant memory per slot: value changes on ~2 % of ticks
            used = np.empty((len(k), procs), np.int64)
            for s in range(procs):
                base = rng.integers(200, 4000) * MiB
                change = rng.random(len(k)) < 0.02
                steps = np.cumsum(change) % 7
                used[:, s] = base + steps * 64 * MiB
            sm = np.full((len(k), procs), -1, np.int16)
            sm[:, :2] = rng.integers(0, 100, (len(k), 2))
            ids = np.empty((len(k), procs), np.int32)
            for s in range(procs):
                if s < procs // 4:
                    ids[:, s] = [ident[(g, s, int(x))] for x in gen]
                else:
                    ids[:, s] = ident[(g, s, 0)]
            gused = used.sum(axis=1) + 600 * MiB
            util = rng.integers(0, 100, len(k))
            flags = bytes([1] * procs)
            for i, tt in enumerate(t):
                grows.append(
                    (
                        float(tt),
                        g,
                        int(gused[i]),
                        80 * GiB,
                        80 * GiB - int(gused[i]),
                        512 * MiB,
                        int(util[i]),
                        30,
                        60,
                        250.5,
                        400.0,
                        None,
                    )
                )
                prows.append(
                    (
                        float(tt),
                        g,
                        procs,
                        ids[i].astype("<i4").tobytes(),
                        used[i].astype("<i8").tobytes(),
                        sm[i].astype("<i2").tobytes(),
                        flags,
                    )
                )
            b = (t // ROLLUP_STEP).astype(np.int64)
            cuts = np.flatnonzero(np.diff(b)) + 1
            starts = np.concatenate(([0], cuts))
            for a_, e_ in zip(starts, np.concatenate((cuts, [len(k)]))):
                grr.append(
                    (
                        float(t[a_]),
                        g,
                        int(gused[a_:e_].max()),
                        80 * GiB,
                        512 * MiB,
                        int(util[a_:e_].max()),
                        60,
                        250.5,
                    )
                )
                prr.append(
                    (
                        float(t[a_]),
                        g,
                        procs,
                        ids[a_].astype("<i4").tobytes(),
                        used[a_:e_].max(axis=0).astype("<i8").tobytes(),
                    )
                )
        db.executemany(f"INSERT INTO gpu_samples VALUES ({', '.join('?' * 12)})", grows)
        db.executemany("INSERT INTO proc_samples VALUES (?, ?, ?, ?, ?, ?, ?)", prows)
        db.executemany("INSERT OR REPLACE INTO gpu_rollup VALUES (?, ?, ?, ?, ?, ?, ?, ?)", grr)
        db.executemany("INSERT OR REPLACE INTO proc_rollup VALUES (?, ?, ?, ?, ?)", prr)
        db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--procs", type=int, default=50)
    ap.add_argument("--keep", metavar="DIR", help="keep the synthetic session and exports here")
    args = ap.parse_args(argv)

    per_tick, per_hour = bench_record(args.gpus, args.procs)
    print(
        f"recording cost per tick ({args.gpus} GPUs x {args.procs} processes, commit per tick): "
        f"{per_tick * 1e3:.2f} ms"
    )
    print(
        f"session file size at 1 s: {per_hour / 1e6:.1f} MB per hour ({per_hour * 24 / 1e9:.2f} GB per day)"
    )

    workdir = pathlib.Path(args.keep) if args.keep else pathlib.Path(tempfile.mkdtemp())
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"bench-{args.hours:g}h-{args.gpus}x{args.procs}.vramscope"
    if not path.exists():
        t = time.perf_counter()
        synthesise(path, args.hours, args.gpus, args.procs)
        print(
            f"(synthesised {args.hours:g} h session in {time.perf_counter() - t:.0f} s: "
            f"{path.stat().st_size / 1e6:.0f} MB)"
        )
    label = f"{args.hours:g} h x {args.gpus} GPUs x {args.procs} processes at 1 s"

    t = time.perf_counter()
    reader = open_session(path)
    store = load_into_store(reader)
    first = time.perf_counter() - t
    assert store.latest is not None
    print(f"reopen to first frame ({label}): {first:.2f} s (budget < 3 s), {store.series_count()} series")

    for name, fn, ext in (("CSV", export_csv, "csv"), ("Perfetto trace JSON", export_trace, "json")):
        out = workdir / f"export.{ext}"
        t = time.perf_counter()
        summary = fn(reader, out)
        took = time.perf_counter() - t
        print(
            f"export {label} to {name}: {took:.1f} s (budget <= 10 s), "
            f"{summary.rows / 1e6:.1f} M lines, {summary.bytes / 1e9:.2f} GB"
        )
        if not args.keep:
            out.unlink()
    reader.close()
    if not args.keep:
        for p in workdir.iterdir():
            p.unlink()
        workdir.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
