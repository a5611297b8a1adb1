"""Hand-built frames and a small recorder for the session tests."""

from __future__ import annotations

from vramscope.core.samples import (
    AgentBuckets,
    AgentDevice,
    AgentEvent,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
    ProcessInfo,
)
from vramscope.core.session import SessionWriter
from vramscope.core.store.store import Store
from vramscope.core.units import GiB, MiB

T0 = 1_700_000_000.0


def info(pid, start, name="python3", cmd=("python3", "train.py", "--lr", "3e-4"), user="alice"):
    return ProcessInfo(pid=pid, start_time=start, user=user, name=name, cmdline=cmd)


def frame(k: int, *, oom: bool = False) -> Frame:
    """Pass k: GPU 0 with a trainer (agent), an Xorg with n/a memory; GPU 1 with a job
    that exits at k=20 and a new process that reuses its PID from k=25."""
    t = T0 + k
    trainer = GpuProcess(
        pid=4242, used=(2 + k % 5) * GiB, sm=50 + k % 7, info=info(4242, T0 - 100), has_agent=True
    )
    xorg = GpuProcess(
        pid=900,
        used=None,
        kinds=("graphics",),
        sm=None,
        info=info(900, T0 - 9999, name="Xorg", cmd=("/usr/lib/xorg/Xorg", "vt2"), user="root"),
    )
    g0 = GpuSample(
        index=0,
        name="Test GPU A",
        uuid="GPU-aaaa",
        pci_bus_id="0000:01:00.0",
        total=24 * GiB,
        used=trainer.used + 700 * MiB,
        free=24 * GiB - trainer.used,
        reserved=300 * MiB,
        util_gpu=k % 100,
        util_memory=None,
        temperature=60,
        power_w=123.4 + (k % 3) * 0.1,
        power_limit_w=450.0,
        processes=(trainer, xorg),
    )
    procs = []
    if k < 20:
        procs.append(GpuProcess(pid=5555, used=1 * GiB, sm=None, info=info(5555, T0 - 5)))
    elif k >= 25:
        procs.append(
            GpuProcess(pid=5555, used=3 * GiB, sm=10, info=info(5555, T0 + 24.5, cmd=("python3", "eval.py")))
        )
    g1 = GpuSample(
        index=1,
        name="Test GPU B",
        uuid="GPU-bbbb",
        total=48 * GiB,
        used=sum(p.used for p in procs) + 500 * MiB,
        util_gpu=None,
        temperature=None,
        processes=tuple(procs),
    )
    events = [AgentEvent("step", t - 0.5, {"step": k})]
    if oom:
        events.append(
            AgentEvent("oom", t - 0.2, {"device": "cuda:0", "requested": 2 * GiB, "snapshot_path": None})
        )
    agent = AgentReport(
        pid=4242,
        start_time=T0 - 100,
        hostname="box",
        time=t,
        step=k,
        devices=(
            AgentDevice(
                device="cuda:0",
                gpu_uuid="GPU-aaaa",
                allocated=(1 + k % 3) * GiB,
                reserved=2 * GiB,
                inactive_split=10 * MiB,
                peak_allocated=2 * GiB,
                num_alloc_retries=k // 10,
                num_ooms=1 if oom else 0,
                buckets=AgentBuckets(
                    weights=512 * MiB,
                    gradients=512 * MiB,
                    optimizer_state=GiB,
                    other_allocated=None,
                    cached_free=GiB - 10 * MiB,
                ),
            ),
        ),
        events=tuple(events),
    )
    return Frame(time=t, gpus=(g0, g1), source="test", simulated=True, agents=(agent,))


def record(path, n: int = 40, store: Store | None = None, oom_at: int | None = None) -> Store:
    store = store if store is not None else Store()
    writer = SessionWriter(path, meta={"source": "test", "simulated": True})
    store.listeners.subscribe(writer)
    for k in range(n):
        store.append(frame(k, oom=(k == oom_at)))
    writer.add_alert(
        T0 + 10.5,
        "leak",
        "allocated rises 4 MiB per step",
        gpu=0,
        pid=4242,
        start_time=T0 - 100,
        detail={"rate": 4 * MiB},
    )
    writer.add_action(T0 + 11.0, "terminate", pid=5555, start_time=T0 - 5, result="SIGTERM sent")
    writer.close()
    return store
