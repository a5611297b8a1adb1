"""A PyTorch memory snapshot of millions of trace entries: `vramscope snapshot` against
what a user does instead, side by side, in time and peak memory.

    .venv/bin/python bench/snapshot_load.py [--events 1000000] [--frames 10 30] [--keep FILE]

Budget (issue 48): the summary in at most 1.2x the time of a bare ``pickle.load``
of the same file, peak RSS at most 2x the file. The file is generated in
PyTorch's documented format (``torch.cuda.memory._snapshot``: Snapshot,
Segment, Block, TraceEntry, Frame) the way the C++ snapshot builds it: one
dict per distinct frame, shared by every stack that holds it (so the pickle
refers to it by its memo index), a new frames list per entry, 10 to 30 frames
a stack, allocations and their frees interleaved, a tenth of the memory alive
from before the trace. Written with ``pickle.dump`` (protocol 4), as
``torch.cuda.memory._dump_snapshot`` does.

Each variant runs in a fresh process, the variants interleaved ``--repeat``
times (the median time is shown, and every run's), and its peak RSS is that
process's own high-water mark (``VmHWM`` of /proc/self/status, read as it exits:
``ru_maxrss`` would also count the bench's own memory, which a child inherits at
fork and Linux keeps across exec), interpreter and imports included:
- bare: ``pickle.load`` alone (the floor: nothing is summarised);
- memory_viz: ``pickle.load`` + ``torch.cuda._memory_viz.trace_plot`` -- the
  HTML page a user opens in a browser instead (the browser's own work after
  that is not counted);
- vramscope: ``vramscope snapshot FILE --json`` as installed (the native reader,
  core/snapshot/native.py, where it is built);
- vramscope, pure-Python reader: the same command with the native reader taken
  away (what an install without a C compiler does).

Ratios are against the bare ``pickle.load`` of the same run: time (median of
the runs) and peak RSS (the largest of the runs) over the file's size.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile

import time

from vramscope.core.snapshot.example import laid_out_segment

MiB = 1 << 20

# each child says its own peak RSS as it exits (a line on stderr)
HWM = (
    "import atexit, sys\n"
    "def _hwm():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            sys.stderr.write(f'VMHWM {line.split()[1]}\\n')\n"
    "atexit.register(_hwm)\n"
)
# `vramscope snapshot FILE --json` as the installed script runs it (vramscope.cli:main)
OURS = "import sys; from vramscope.cli import main; sys.exit(main(['snapshot', sys.argv[1], '--json']))"
VARIANTS = {
    "bare pickle.load": "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))",
    "pickle.load + _memory_viz.trace_plot": (
        "import pickle,sys; from torch.cuda import _memory_viz as m; "
        "d = pickle.load(open(sys.argv[1],'rb')); html = m.trace_plot(d); print(len(html), file=sys.stderr)"
    ),
}


# `vramscope snapshot FILE --json` with the native reader taken away (as without a compiler)
PURE_PYTHON = (
    "from vramscope.core.snapshot import native; native._columns = None; "
    "native.WHY_NOT = 'taken away by the bench'\n" + OURS
)


def generate(events: int, frames: tuple[int, int], seed: int = 1) -> dict:
    rng = random.Random(seed)
    pool = [
        {
            "filename": f"/home/ada/project/{'model' if i % 3 else 'train'}_{i % 40}.py",
            "line": i,
            "name": f"fn_{i}",
        }
        if i % 2
        else {
            "filename": f"/usr/lib/python3/site-packages/torch/nn/modules/m{i % 60}.py",
            "line": i,
            "name": "forward",
        }
        for i in range(5000)
    ]
    stacks = [[pool[rng.randrange(len(pool))] for _ in range(rng.randint(*frames))] for _ in range(3000)]
    base, slot = 0x7F0000000000, 4096
    trace, alive, t = [], [], 1_700_000_000_000_000
    seg_blocks = []
    for i in range(events // 20):  # alive before the trace, some freed in it
        size = rng.choice((512, 4096, 1 << 20, 8 << 20))
        seg_blocks.append(
            {
                "address": base + i * (16 << 20),
                "size": size,
                "requested_size": size,
                "state": "active_allocated",
                "frames": list(rng.choice(stacks)),
            }
        )
    next_addr = base + (events // 20 + 1) * (16 << 20)
    while len(trace) < events:
        t += rng.randint(1, 40)
        if alive and (rng.random() < 0.48 or len(alive) > 20000):
            addr, size, stack = alive.pop(rng.randrange(len(alive)))
            trace.append(
                {
                    "action": "free_requested",
                    "addr": addr,
                    "size": size,
                    "stream": 0,
                    "time_us": t,
                    "frames": list(stack),
                }
            )
            trace.append(
                {
                    "action": "free_completed",
                    "addr": addr,
                    "size": size,
                    "stream": 0,
                    "time_us": t,
                    "frames": list(stack),
                }
            )
        else:
            size = rng.choice((512, 1024, 4096, 65536, 1 << 20, 4 << 20))
            stack = rng.choice(stacks)
            next_addr += slot * (1 + size // slot)
            alive.append((next_addr, size, stack))
            trace.append(
                {
                    "action": "alloc",
                    "addr": next_addr,
                    "size": size,
                    "stream": 0,
                    "time_us": t,
                    "frames": list(stack),
                }
            )
    for b in seg_blocks[::10]:
        trace.append(
            {
                "action": "free_completed",
                "addr": b["address"],
                "size": b["size"],
                "stream": 0,
                "time_us": t,
                "frames": [],
            }
        )
    blocks = [b for i, b in enumerate(seg_blocks) if i % 10] + [
        {"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": list(k)}
        for a, s, k in alive
    ]
    blocks.sort(key=lambda b: b["address"])
    allocated = [(b["address"], b["size"], b["frames"]) for b in blocks]
    segments = [laid_out_segment(allocated[i : i + 64]) for i in range(0, len(allocated), 64)]
    return {
        "segments": segments,
        "device_traces": [trace],
        "allocator_settings": {"expandable_segments": False},
    }


def measure(argv: list[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS bytes, exit status) of one fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - t0
    err = proc.stderr.decode(errors="replace")
    if proc.returncode or "Traceback" in err:
        print(f"  (exit {proc.returncode}: {err.strip()[-300:]})")
    peaks = [int(line.split()[1]) * 1024 for line in err.splitlines() if line.startswith("VMHWM ")]
    return seconds, max(peaks, default=0), proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--frames", type=int, nargs=2, default=(10, 30))
    ap.add_argument("--keep", default=None, help="write the snapshot here and keep it")
    ap.add_argument("--no-peer", action="store_true", help="skip the memory_viz variant (slow)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each variant, interleaved (median)")
    ap.add_argument("--no-fallback", action="store_true", help="skip the pure-Python reader's variant")
    args = ap.parse_args()
    path = args.keep or os.path.join(tempfile.mkdtemp(prefix="vs-snap-"), "snapshot.pickle")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        snap = generate(args.events, tuple(args.frames))
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=4)
        del snap
        print(f"generated in {time.perf_counter() - t0:.1f} s")
    size = os.path.getsize(path)
    print(
        f"{path}: {size / MiB:.0f} MiB, {args.events:,} trace entries, stacks of {args.frames[0]}-{args.frames[1]} frames"
    )
    runs = {name: [sys.executable, "-c", HWM + code, path] for name, code in VARIANTS.items()}
    if args.no_peer:
        runs.pop("pickle.load + _memory_viz.trace_plot")
    runs["vramscope snapshot --json"] = [sys.executable, "-c", HWM + OURS, path]
    if not args.no_fallback:
        runs["vramscope snapshot --json, pure Python"] = [sys.executable, "-c", HWM + PURE_PYTHON, path]
    times: dict[str, list[float]] = {name: [] for name in runs}
    rss: dict[str, int] = {}
    for r in range(args.repeat):  # interleaved, so load from other jobs falls on every variant
        for name, argv in runs.items():
            if r and (name.startswith("pickle.load +") or name.endswith("pure Python")):
                continue  # the peer is slow and far off: once is enough
            sec, peak, _rc = measure(argv)
            times[name].append(sec)
            rss[name] = max(rss.get(name, 0), peak)
    median = {name: statistics.median(t) for name, t in times.items()}
    bare_s = median["bare pickle.load"]
    bare_rss = rss["bare pickle.load"]
    head = f"{'variant (median of runs)':42} {'time':>8} {'x bare':>7} {'peak RSS':>10} {'x file':>7} {'x bare':>7}"
    print(head + "  runs")
    for name in runs:
        sec, peak = median[name], rss[name]
        runs_text = " ".join(f"{t:.1f}" for t in times[name])
        print(
            f"{name:42} {sec:7.1f}s {sec / bare_s:6.2f}x {peak / MiB:8.0f}MiB {peak / size:6.2f}x "
            f"{peak / bare_rss:6.2f}x  {runs_text}"
        )
    if not args.keep:
        os.unlink(path)


if __name__ == "__main__":
    main()
