"""Budget: one NVML sampling pass over 8 GPUs x 100 processes <= 5 ms (median).

Real pynvml against the fake libnvidia-ml.so.1 the test suite builds
(tests/fake_nvml/fake_nvml.c), with psutil enrichment of REAL processes
(`sleep`, started here), the process cache warm. Prints median / p95 in ms
for the whole pass and for its two halves (NVML only, psutil only), and the
/proc/*/fd scan for /dev/nvidia* holders that runs every 10 s.

The peer the budget names (issue 28: whole pass <= 1.4x): a bare pynvml loop
making the same NVML calls in the same process -- every pynvml call one
NVML-only pass makes is recorded (function and arguments; the outermost calls
only, not pynvml's own helpers inside them), then replayed directly, nothing
else done with the answers. The bare loop, the whole pass, the NVML part and
the process cache are timed side by side (each round runs each once, the
order rotating), in thread CPU time and wall time; the load average is
printed beside the figures.

--no-reuse: also time a pass that reuses none of the previous pass's values
(every GpuProcess and GpuSample made anew), what a pass costs when every
process's figures moved.

If nvitop is importable, one refresh of nvitop's Python API on the same
state is timed too -- Device.all(), each device's snapshot and processes(),
and GpuProcess.take_snapshots() (what `nvitop -1` does) -- and the ratio
printed. nvitop is optional: `pip install nvitop` to compare.

    .venv/bin/python bench/sampling_pass.py [--passes 200] [--distinct] [--no-reuse]

--distinct: 800 different processes (100 per GPU) instead of the same 100
processes listed on every GPU.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakenvml import GiB, MiB, FakeGpu, FakeProcess, FakeState, build_library, preload, write_state  # noqa: E402

GPUS = 8
PER_GPU = 100


def timed(fn, passes: int, warmup: int = 5) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(passes):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def side_by_side(runs: dict, rounds: int, warmup: int = 5) -> tuple[dict, dict]:
    """Each round runs every function once, the order rotating from round to
    round, so that load from other jobs falls on all of them alike.
    -> ({name: [thread CPU ms]}, {name: [wall ms]})."""
    names = list(runs)
    for _ in range(warmup):
        for fn in runs.values():
            fn()
    cpu = {n: [] for n in names}
    wall = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            fn = runs[n]
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            fn()
            w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            cpu[n].append((c1 - c0) / 1e6)
            wall[n].append((w1 - w0) / 1e6)
    return cpu, wall


def forget_values(src) -> None:
    """Make the next pass build every GpuProcess and GpuSample anew."""
    for gpu in getattr(src, "_gpus", {}).values():
        for name, empty in (("last_seen", None), ("last_procs", {}), ("last_sample", None)):
            if hasattr(gpu, name):
                setattr(gpu, name, empty)


def nvml_only_source(source_class):
    """The same source with the host side (the /proc reads, psutil) left out."""
    from vramscope.sources.machine.processes import ProcessCache

    class NoPsutil(ProcessCache):
        def lookup_many(self, many, *rest):
            return {}

    src = source_class(processes=NoPsutil())
    src.host_usage.read = lambda pids, *rest: {}
    if hasattr(src, "stats"):  # (an older tree, measured for a before/after, has no shared read)
        src.stats.read_many = lambda pids: {}
    return src


def recorded_calls(one_pass) -> list:
    """Every pynvml ``nvml*`` call (function, args) that ``one_pass`` makes itself.

    Only the outermost calls: pynvml's own helpers that a call runs inside
    (``nvmlStructToFriendlyObject`` for each process entry, the versioned
    function behind an unversioned one) run again when the call is replayed,
    so recording them too would make the bare loop do the work twice.

    The process lists and SM samples vramscope reads raw (sources/nvml/nvml_raw.py:
    the same NVML C calls, without pynvml's object per entry) are recorded as
    the public pynvml call of the same name and arguments, so the bare loop
    makes them through pynvml.
    """
    import pynvml

    try:
        from vramscope.sources.nvml.nvml_raw import RawCall
    except ImportError:  # an older tree, measured for a before/after, reads through pynvml only
        RawCall = type("RawCall", (), {"__call__": lambda self, *a: None})

    calls, originals, depth = [], {}, [0]
    raw_call = RawCall.__call__

    def raw_spy(self, *a):
        if depth[0] == 0:
            calls.append((originals[self.name], a, {}))
        depth[0] += 1
        try:
            return raw_call(self, *a)
        finally:
            depth[0] -= 1

    for name in dir(pynvml):
        fn = getattr(pynvml, name)
        if name.startswith("nvml") and callable(fn) and name not in ("nvmlInit", "nvmlShutdown"):
            originals[name] = fn

            def spy(*a, _fn=fn, **kw):
                if depth[0] == 0:
                    calls.append((_fn, a, kw))
                depth[0] += 1
                try:
                    return _fn(*a, **kw)
                finally:
                    depth[0] -= 1

            setattr(pynvml, name, spy)
    RawCall.__call__ = raw_spy
    try:
        one_pass()
    finally:
        RawCall.__call__ = raw_call
        for name, fn in originals.items():
            setattr(pynvml, name, fn)
    return calls


def replay(calls) -> None:
    import pynvml

    for fn, a, kw in calls:
        try:
            fn(*a, **kw)
        except pynvml.NVMLError:
            pass


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return f"median {statistics.median(ms):6.2f} ms   p95 {p95:6.2f} ms"


def make_state(pids_per_gpu: list[list[int]]) -> FakeState:
    gpus = []
    for g, pids in enumerate(pids_per_gpu):
        procs = [
            FakeProcess(pid, (i + 1) * 64 * MiB, "compute", sm=(i * 7) % 100 if i % 3 else None)
            for i, pid in enumerate(pids)
        ]
        for pid in pids[:5]:  # a few also in the graphics list
            procs.append(FakeProcess(pid, 32 * MiB, "graphics"))
        gpus.append(
            FakeGpu(
                name="NVIDIA H100 80GB HBM3",
                total=80 * GiB,
                used=(g + 1) * 8 * GiB,
                utilization=(50 + g, 20),
                temperature=60 + g,
                power_mw=400_000,
                power_limit_mw=700_000,
                processes=procs,
            )
        )
    return FakeState(gpus=gpus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passes", type=int, default=200)
    ap.add_argument(
        "--distinct", action="store_true", help="800 distinct processes instead of 100 shared by all GPUs"
    )
    ap.add_argument("--no-reuse", action="store_true", help="also time passes that reuse no previous value")
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp(prefix="vramscope-bench-"))
    lib = build_library(work / "lib")
    n_real = GPUS * PER_GPU if args.distinct else PER_GPU
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(n_real)]
    try:
        pids = [p.pid for p in sleepers]
        per_gpu = (
            [pids[g * PER_GPU : (g + 1) * PER_GPU] for g in range(GPUS)] if args.distinct else [pids] * GPUS
        )
        state_path = work / "state.txt"
        write_state(state_path, make_state(per_gpu))
        os.environ["FAKE_NVML_STATE"] = str(state_path)
        preload(lib)

        from vramscope.sources.nvml.nvml_source import NvmlSource
        from vramscope.sources.machine.processes import ProcessCache

        distinct = len(set(pids))
        print(
            f"state: {GPUS} GPUs x {PER_GPU} processes ({distinct} distinct real PIDs, "
            f"5 per GPU also in the graphics list); {args.passes} passes, warm"
        )

        source = NvmlSource()
        frame = source.sample(time.time())
        assert frame.error is None and len(frame.gpus) == GPUS
        assert all(len(g.processes) == PER_GPU for g in frame.gpus)

        nvml_only = nvml_only_source(NvmlSource)
        nvml_only.sample(time.time())
        calls = recorded_calls(lambda: nvml_only.sample(time.time()))
        cache = ProcessCache()
        cache.lookup_many(pids)
        runs = {
            "bare": lambda: replay(calls),
            "whole": lambda: source.sample(time.time()),
            "nvml": lambda: nvml_only.sample(time.time()),
            "psutil": lambda: cache.lookup_many(pids),
        }
        if args.no_reuse:
            fresh = NvmlSource()
            fresh.sample(time.time())
            runs["fresh"] = lambda: (forget_values(fresh), fresh.sample(time.time()))
        cpu, wall = side_by_side(runs, args.passes)
        load = open("/proc/loadavg").read().split()[:3]
        print(
            f"side by side, {args.passes} rounds (each round runs each once, order rotating); load {' '.join(load)}"
        )
        print("                                      thread CPU time                   wall time")
        for key, label in (
            ("bare", f"bare pynvml loop, the same {len(calls)} calls"),
            ("whole", "vramscope pass (NVML + host reads)"),
            ("nvml", "  NVML part only (no /proc, no psutil)"),
            ("psutil", f"  process cache alone ({distinct} PIDs)"),
            ("fresh", "  whole pass reusing no previous value"),
        ):
            if key in cpu:
                print(f"{label:<40} {summary(cpu[key])}   {summary(wall[key])}")
        base_cpu, base_wall = statistics.median(cpu["bare"]), statistics.median(wall["bare"])
        for key, label in (("whole", "whole pass"), ("nvml", "NVML part"), ("fresh", "pass reusing nothing")):
            if key in cpu:
                print(
                    f"ratio {label} / bare loop: {statistics.median(cpu[key]) / base_cpu:.2f}x CPU time "
                    f"(medians; fastest pass: {min(cpu[key]) / min(cpu['bare']):.2f}x), "
                    f"{statistics.median(wall[key]) / base_wall:.2f}x wall"
                )
        nvml_only.close()
        from vramscope.sources.nvml.device_holders import DeviceHolderScanner, scan

        procs = sum(1 for n in os.listdir("/proc") if n.isdigit())
        holder_scan = timed(scan, max(10, args.passes // 10))
        every = DeviceHolderScanner().interval
        print(
            f"  /dev/nvidia* holder scan ({procs} processes, once every {every:.0f} s): "
            f"{summary(holder_scan)}  = {statistics.median(holder_scan) / every:.3f} ms per second"
        )

        try:
            import logging

            logging.getLogger("nvitop").setLevel(logging.CRITICAL)
            from nvitop import Device, GpuProcess
        except ImportError:
            print("nvitop: not installed (pip install nvitop to compare)")
            return 0

        def nvitop_refresh():
            devices = Device.all()
            for device in devices:
                device.as_snapshot()
                procs = device.processes()
                GpuProcess.take_snapshots(procs.values(), failsafe=True)

        import nvitop

        rounds = max(20, args.passes // 4)
        cpu, wall = side_by_side(
            {
                "nvitop": nvitop_refresh,
                "bare": lambda: replay(calls),
                "whole": lambda: source.sample(time.time()),
            },
            rounds,
            warmup=3,
        )
        load = open("/proc/loadavg").read().split()[:3]
        print(
            f"nvitop {nvitop.__version__}'s API refresh, same state, {rounds} rounds side by side; load {' '.join(load)}"
        )
        print(f"  nvitop refresh:  {summary(cpu['nvitop'])} CPU   {summary(wall['nvitop'])} wall")
        for key, label in (("bare", "bare pynvml loop"), ("whole", "vramscope pass")):
            print(
                f"  nvitop / {label}: {statistics.median(cpu['nvitop']) / statistics.median(cpu[key]):.1f}x CPU time, "
                f"{statistics.median(wall['nvitop']) / statistics.median(wall[key]):.1f}x wall"
            )
        source.close()
        return 0
    finally:
        for p in sleepers:
            p.kill()
        for p in sleepers:
            p.wait()


if __name__ == "__main__":
    raise SystemExit(main())
