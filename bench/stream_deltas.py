"""What a 16 GPU x 1,024 process frame costs the window to apply, whole
(stream version 1) and as a delta (version 2, core/stream/deltas.py), side
by side in one run. Apply = decode the line's JSON + build the Frame (the
codec's schema check included), as the window's reader thread does.

Three machines: steady (only the time moves), 10 % of the processes
changing each second (a typical busy box: SM % and memory of the active
ones), and every process changing every second (bench/window_scale.py's
BigBox, the worst case).

    python bench/stream_deltas.py [--frames 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from window_scale import BigBox  # noqa: E402

from vramscope.core.stream import protocol  # noqa: E402
from vramscope.core.stream.codec import FrameDecoder, frame_to_wire  # noqa: E402
from vramscope.core.stream.delta_reader import FrameAssembler  # noqa: E402
from vramscope.core.stream.deltas import FrameDiffer  # noqa: E402


def frames(box: BigBox, n: int, share: float):
    """n frames in which ``share`` of the processes change from one to the next."""
    first = box.sample(1e9)
    out = [first]
    for k in range(1, n):
        nxt = box.sample(1e9 + k)
        gpus = []
        for old, new in zip(out[-1].gpus, nxt.gpus):
            cut = int(len(new.processes) * share)
            gpus.append(dataclasses.replace(new, processes=new.processes[:cut] + old.processes[cut:]))
        out.append(dataclasses.replace(nxt, gpus=tuple(gpus)))
    return out


def timed(fn) -> float:
    """CPU ms of this process (a shared box's other load does not count)."""
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) * 1e3


def sampler_pass(passes: int) -> str:
    """The sampler process's pass over the BigBox (all changing), as `vramscope stream`
    runs it (sources/assembly.py's monitor, the stream writer as its sink): CPU ms
    of the pass and of its parts, median of ``passes`` after two."""
    import io
    import threading

    from vramscope.commands.stream import StreamWriter
    from vramscope.core.store.store import STAGE_RECORDER, Store
    from vramscope.sources.assembly import build_monitor

    box = BigBox(16, 1024)
    monitor = build_monitor(box, enrichers=None, interval=1.0, store=Store(fine_points=8, coarse_points=8))
    parts: dict = {}

    def timed(name, fn):
        def run(*args):
            t0 = time.thread_time()
            try:
                return fn(*args)
            finally:
                parts.setdefault(name, []).append((time.thread_time() - t0) * 1e3)

        return run

    store = monitor.store
    store._listeners = [(rank, stage, timed(stage, fn)) for rank, stage, fn in store._listeners]
    writer = StreamWriter(io.BytesIO(), monitor.engine, threading.Event())
    monitor.pipeline.subscribe(timed("writer", writer), STAGE_RECORDER)
    box.sample = timed("source", box.sample)
    whole = []
    for _ in range(passes + 2):
        t0 = time.thread_time()
        monitor.pipeline.sample_once()
        whole.append((time.thread_time() - t0) * 1e3)
    monitor.close()
    text = ", ".join(f"{name} {statistics.median(v[2:]):.0f}" for name, v in parts.items())
    return f"{statistics.median(whole[2:]):.0f} ms (the first {whole[0]:.0f} ms; {text})"


def first_processes(rounds: int) -> str:
    """The first message that carries every process (the window's first delta after
    its sampler's devices-only first look; a keyframe alike), stream version 3
    (processes nested) against 4 (flat: core/stream/flat_processes.py), alternated:
    CPU ms to parse and apply it, and the objects the parse leaves for the garbage
    collector to track until it is applied, and those the reader holds after."""
    import gc

    frame = BigBox(16, 1024).sample(1e9)
    look = dataclasses.replace(frame, gpus=tuple(dataclasses.replace(g, processes=()) for g in frame.gpus))
    lines = {}
    for version in (3, 4):
        differ = FrameDiffer(keyframe_every=10**9, version=version)
        lines[version] = (
            protocol.encode(differ.message(look, [])),
            protocol.encode(differ.message(frame, [])),
        )
    figures: dict = {3: [], 4: []}
    for _ in range(rounds):
        for version, (first, full) in lines.items():
            reader = FrameAssembler(version)
            reader.whole(json.loads(first))
            parsed: list = []  # (the previous round's message let go before the count)
            gc.collect()
            before = len(gc.get_objects())
            ms = timed(lambda full=full: parsed.append(json.loads(full)))
            tracked = len(gc.get_objects()) - before
            ms += timed(lambda: reader.delta(parsed[0]))
            parsed.clear()
            gc.collect()
            held = len(gc.get_objects()) - before  # what the reader keeps of it
            figures[version].append((ms, tracked, held))
    return "; ".join(
        f"version {v}: {statistics.median(ms for ms, _, _ in f):.0f} ms, "
        f"{f[0][1]:,} tracked objects from the parse, {f[0][2]:,} held by the reader after "
        f"({len(lines[v][1]) / 1e6:.2f} MB)"
        for v, f in figures.items()
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=10)
    args = ap.parse_args()
    print(
        "16 GPUs x 1,024 processes: CPU ms to apply one frame (median of "
        f"{args.frames - 1}), bytes on the wire"
    )
    for label, share in (("steady", 0.0), ("10 % changing", 0.1), ("all changing", 1.0)):
        seq = frames(BigBox(16, 1024), args.frames, share)
        whole_lines = [protocol.encode({"type": "frame", "frame": frame_to_wire(f)}) for f in seq]
        differ = FrameDiffer(keyframe_every=10**9)
        delta_lines = [protocol.encode(differ.message(f, [])) for f in seq]
        decoder = FrameDecoder()
        whole = [timed(lambda line=line: decoder.decode(json.loads(line)["frame"])) for line in whole_lines]
        reader = FrameAssembler()
        reader.whole(json.loads(delta_lines[0]))
        delta = [timed(lambda line=line: reader.delta(json.loads(line))) for line in delta_lines[1:]]
        assert reader.delta is not None and reader._seq == args.frames
        print(
            f"  {label:14s} whole frame {statistics.median(whole[1:]):7.1f} ms "
            f"({len(whole_lines[1]) / 1e6:.2f} MB)   delta {statistics.median(delta):7.1f} ms "
            f"({len(delta_lines[1]) / 1e3:.0f} kB)"
        )
    print(f"  the first message of every process (median of {args.frames}): {first_processes(args.frames)}")
    print(f"  the sampler process's pass, all changing: {sampler_pass(args.frames)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
