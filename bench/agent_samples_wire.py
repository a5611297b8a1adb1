"""What carrying every agent sample costs the stream (AgentReport.samples): bytes of
a delta line per frame and CPU µs to decode and apply it, for an agent whose report
carries the samples since the previous frame, side by side with the same report
carrying only its newest (the wire before), in one run.

Frames every second; the agent samples every 0.5 s (its default: 2 a frame) or every
0.1 s (10 a frame); one CUDA device with its buckets, or four.

    python bench/agent_samples_wire.py [--frames 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport, AgentSamplePoint, Frame
from vramscope.core.stream import protocol
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer

GiB = 1 << 30


def device(index: int, t: float) -> AgentDevice:
    moving = int(t * 1e6) % (8 * GiB)
    return AgentDevice(
        device=f"cuda:{index}",
        gpu_uuid=f"GPU-12345678-aaaa-bbbb-cccc-12345678900{index}",
        allocated=moving,
        reserved=12 * GiB,
        active=moving,
        inactive_split=1 << 20,
        requested=moving - 512,
        peak_allocated=moving + (1 << 20),
        num_alloc_retries=0,
        num_ooms=0,
        alloc_count=int(t * 100),
        free_count=int(t * 99),
        buckets=AgentBuckets(
            weights=2 * GiB,
            gradients=2 * GiB,
            optimizer_state=4 * GiB,
            other_allocated=moving,
            cached_free=GiB,
        ),
        total=80 * GiB,
        runtime="CUDA 12.4",
    )


def frames(n: int, per_frame: int, devices: int, carry: bool):
    for k in range(n):
        t = 1.7e9 + k
        times = [t - 1 + (i + 1) / per_frame for i in range(per_frame)]
        samples = tuple(
            AgentSamplePoint(x, 10 * k, tuple(device(d, x) for d in range(devices))) for x in times
        )
        report = AgentReport(
            pid=4242,
            start_time=1.6e9,
            time=times[-1],
            step=10 * k,
            devices=tuple(device(d, times[-1]) for d in range(devices)),
            samples=samples if carry else (),
        )
        yield Frame(time=t + 0.01, agents=(report,))


def measure(n: int, per_frame: int, devices: int, carry: bool) -> tuple[float, float]:
    """(median bytes of a delta line, median CPU µs to decode and apply it)."""
    differ = FrameDiffer(keyframe_every=10**9, version=protocol.STREAM_VERSION)
    assembler = FrameAssembler()
    sizes, costs = [], []
    for k, frame in enumerate(frames(n, per_frame, devices, carry)):
        line = protocol.encode(differ.message(frame, []))
        t0 = time.thread_time()
        message = json.loads(line)  # (as the reader's LineDecoder parses a line)
        (assembler.whole if message[protocol.TYPE] == protocol.FRAME else assembler.delta)(message)
        cost = (time.thread_time() - t0) * 1e6
        if k:  # (the first is a whole frame)
            sizes.append(len(line))
            costs.append(cost)
    return statistics.median(sizes), statistics.median(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200)
    args = parser.parse_args()
    print("agent report on the stream, per frame: bytes, decode + apply CPU µs (medians)")
    for per_frame in (2, 10):
        for devices in (1, 4):
            new_b, new_c = measure(args.frames, per_frame, devices, True)
            old_b, old_c = measure(args.frames, per_frame, devices, False)
            print(
                f"  {per_frame:2d} samples a frame x {devices} device(s): every sample {new_b:,.0f} B, "
                f"{new_c:,.0f} µs | newest only {old_b:,.0f} B, {old_c:,.0f} µs | "
                f"{new_b / old_b:.2f}x bytes, {new_c / old_c:.2f}x CPU"
            )


if __name__ == "__main__":
    main()
