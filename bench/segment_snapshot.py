"""The allocator's picture: summarising a memory snapshot of 1,000 segments.

    .venv/bin/python bench/segment_snapshot.py [--segments 1000] [--blocks 8] [--repeat 50]

Budget (issue 25): <= 5 ms for 1,000 segments, taken on the agent thread
(agent/allocator/allocator_watch.py), never the training thread. Measured side by side
with PyTorch's own text summary of the same segments
(torch.cuda._memory_viz.segsum, what `python -m torch.cuda._memory_viz
segsum` prints), and with JSON-encoding the bounded summary the agent sends.
The snapshot itself (torch.cuda.memory_snapshot) needs a GPU: tests/gpu times
it where one is lent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))  # tests.agent.snapshots

from tests.agent.snapshots import many_segments  # noqa: E402
from vramscope.agent.allocator.segments import summarize  # noqa: E402


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=1000)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    snap = many_segments(args.segments, args.blocks)
    segs = snap["segments"]
    ours = timed(lambda: summarize(segs, "cuda:0"), args.repeat)
    summary = summarize(segs, "cuda:0")
    enc = timed(lambda: json.dumps(summary), args.repeat)
    print(
        f"{args.segments} segments x {args.blocks} blocks: summarize {ours:.2f} ms (median of "
        f"{args.repeat}); JSON of the bounded summary {enc:.2f} ms, {len(json.dumps(summary))} bytes"
    )
    try:
        from torch.cuda import _memory_viz
    except Exception as exc:  # noqa: BLE001
        print(f"peer not measured: {exc}")
        return
    peer = timed(lambda: _memory_viz.segsum(snap), max(3, args.repeat // 10))
    print(
        f"peer torch.cuda._memory_viz.segsum on the same snapshot: {peer:.2f} ms; "
        f"ratio ours/peer {ours / peer:.2f}"
    )


if __name__ == "__main__":
    main()
