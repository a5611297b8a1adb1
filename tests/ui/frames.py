"""Hand-built frames for the window tests: a small scripted workstation.

Deterministic and independent of the demo source, so a test states exactly
what the window must show.
"""

from __future__ import annotations

from vramscope.core.samples import (
    ACCESS_DENIED,
    NOT_VISIBLE,
    Frame,
    GpuProcess,
    GpuSample,
    ProcessInfo,
)
from vramscope.core.units import GiB

T0 = 1_700_000_000.0  # a fixed epoch, so times in tests are exact

TRAIN = ProcessInfo(
    pid=4242,
    start_time=T0 - 3600,
    user="alice",
    name="python",
    cmdline=("python", "train.py", "--config", "llama-7b-lora.yaml"),
    ppid=4000,
    status="running",
)
KERNEL = ProcessInfo(
    pid=3131,
    start_time=T0 - 6 * 3600,
    user="alice",
    name="python",
    cmdline=(
        "/usr/bin/python3",
        "-m",
        "ipykernel_launcher",
        "-f",
        "/home/alice/.local/share/jupyter/runtime/kernel-5f1c.json",
    ),
    ppid=3000,
    status="sleeping",
)
JOB = ProcessInfo(
    pid=5555,
    start_time=T0 + 20,
    user="bob",
    name="python",
    cmdline=("python", "eval.py"),
    ppid=5000,
    status="running",
)
HIDDEN = ProcessInfo(pid=777, visibility=NOT_VISIBLE)
DENIED = ProcessInfo(pid=888, visibility=ACCESS_DENIED)

TOTAL = 24 * GiB


def frame_at(k: int, lost_gpu1: bool = False, error: str | None = None) -> Frame:
    """Frame number k (one per second from T0)."""
    t = T0 + k
    if error:
        return Frame(time=t, source="nvml", error=error)
    train = min(18, 6 + 4 * (k // 20)) * GiB  # ramps in steps, then plateaus
    p0 = [
        GpuProcess(pid=4242, used=train, sm=87, info=TRAIN, has_agent=True),
        GpuProcess(pid=3131, used=3 * GiB, sm=0, info=KERNEL),
    ]
    if 20 <= k < 50:
        p0.append(GpuProcess(pid=5555, used=2 * GiB, sm=30, info=JOB))
    used0 = sum(p.used for p in p0) + GiB // 2
    gpu0 = GpuSample(
        index=0,
        name="NVIDIA GeForce RTX 4090",
        uuid="GPU-0000",
        total=TOTAL,
        used=used0,
        free=TOTAL - used0,
        reserved=GiB // 3,
        util_gpu=87,
        temperature=71,
        power_w=320.0,
        power_limit_w=450.0,
        processes=tuple(p0),
    )
    if lost_gpu1:
        gpu1 = GpuSample(index=1, name="NVIDIA RTX A6000", uuid="GPU-1111", error="GPU is lost")
    else:
        p1 = (
            GpuProcess(pid=777, used=None, sm=None, info=HIDDEN),
            GpuProcess(pid=888, used=GiB, sm=5, info=DENIED),
        )
        gpu1 = GpuSample(
            index=1,
            name="NVIDIA RTX A6000",
            uuid="GPU-1111",
            total=48 * GiB,
            used=5 * GiB,
            free=43 * GiB,
            reserved=None,
            util_gpu=4,
            temperature=None,
            power_w=None,
            processes=p1,
        )
    return Frame(time=t, gpus=(gpu0, gpu1), source="test", simulated=False, driver_version="550.54.14")


class ScriptedSource:
    """A Source that plays frame_at(0), frame_at(1), ... whatever `now` is."""

    name = "test"
    simulated = False

    def __init__(self, **kw):
        self.k = 0
        self.kw = kw
        self.closed = False

    def sample(self, now: float) -> Frame:
        f = frame_at(self.k, **self.kw)
        self.k += 1
        return f

    def close(self) -> None:
        self.closed = True


class NoDriverSource:
    name = "nvml"
    simulated = False
    MESSAGE = "NVIDIA driver not found: NVML Shared Library Not Found"

    def sample(self, now: float) -> Frame:
        return Frame(time=now, source="nvml", error=self.MESSAGE)

    def close(self) -> None:
        pass


def eight_gpus_frame(k: int) -> Frame:
    """8 GPUs with one process each: more GPU rows than fit in the window."""
    gpus = []
    for i in range(8):
        info = ProcessInfo(
            pid=9000 + i, start_time=T0 - 100, user="alice", name="python", cmdline=("python", f"rank{i}.py")
        )
        used = (4 + i + (k % 5)) * GiB
        gpus.append(
            GpuSample(
                index=i,
                name="NVIDIA H100 80GB HBM3",
                total=80 * GiB,
                used=used + GiB,
                free=79 * GiB - used,
                reserved=GiB // 2,
                util_gpu=90,
                processes=(GpuProcess(pid=9000 + i, used=used, sm=90, info=info),),
            )
        )
    return Frame(time=T0 + k, gpus=tuple(gpus), source="test")
