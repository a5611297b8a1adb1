"""What the monitor adds to an OOM event: the other processes on the GPU (NVML) and this
process's memory outside PyTorch -- so the shortfall splits into each."""

from __future__ import annotations

from vramscope.core.agent_figures import oom_context
from vramscope.core.samples import GpuProcess, ProcessInfo

MiB = 1 << 20


def _proc(pid, used, name="python"):
    return GpuProcess(pid=pid, used=used, info=ProcessInfo(pid=pid, start_time=None, name=name))


def test_note_names_the_others_and_what_this_process_holds_outside_pytorch_once():
    procs = [
        _proc(100, 9000 * MiB),
        _proc(200, 600 * MiB, "python3"),
        _proc(300, None, "Xorg"),
        _proc(400, 1200 * MiB, "ray::Worker"),
    ]
    data = {
        "device": "cuda:0",
        "requested": 2000 * MiB,
        "device_free": 1000 * MiB,
        "device_total": 24000 * MiB,
        "reserved": 8500 * MiB,
    }
    oom_context.note(data, procs, procs[0], reserved=8500 * MiB)
    assert data["gpu_processes"] == [
        {"pid": 400, "name": "ray::Worker", "used": 1200 * MiB},
        {"pid": 200, "name": "python3", "used": 600 * MiB},
    ]
    assert data["outside_pytorch"] == 500 * MiB
    oom_context.note(data, procs[:1], procs[0], reserved=0)  # a later frame changes nothing
    assert len(data["gpu_processes"]) == 2
    r = oom_context.report_of(data)
    assert r["split"]["other_processes"] == 1000 * MiB and r["split"]["real_need"] == 0
