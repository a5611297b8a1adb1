"""WSL: detected from Microsoft's documented signs and said once, plainly."""

from __future__ import annotations

import time

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.core.status.status_report import frame_to_dict
from vramscope.core.status.status_table import render_table
from vramscope.core.wsl import WSL_NOTICE
from vramscope.sources.nvml.nvml_source import NvmlSource
from vramscope.sources.nvml.wsl import running_under_wsl

WSL_KERNEL = (
    "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) "
    "(gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n"
)
DEBIAN_KERNEL = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian\n"


def test_wsl_needs_both_the_microsoft_kernel_and_dev_dxg(tmp_path):
    version = tmp_path / "version"
    dxg = tmp_path / "dxg"
    version.write_text(WSL_KERNEL)
    assert not running_under_wsl(str(version), str(dxg))  # WSL 1 or no GPU paravirtualisation
    dxg.write_text("")
    assert running_under_wsl(str(version), str(dxg))
    version.write_text(DEBIAN_KERNEL)
    assert not running_under_wsl(str(version), str(dxg))
    assert not running_under_wsl(str(tmp_path / "missing"), str(dxg))


def test_this_machine_is_not_wsl():
    assert running_under_wsl() is False


def test_under_wsl_status_says_why_process_memory_is_na(fake_nvml, sleepers):
    (a,) = sleepers(1)
    fake_nvml.write(FakeState(gpus=[FakeGpu(used=6 * GiB, processes=[FakeProcess(a, None, sm=30)])]))
    src = NvmlSource(wsl=True)
    try:
        frame = src.sample(time.time())
    finally:
        src.close()
    doc = frame_to_dict(frame)
    assert doc["wsl"] is True and doc["notices"] == [WSL_NOTICE]
    assert doc["gpus"][0]["processes"][0]["used"] is None  # n/a, never 0
    assert doc["gpus"][0]["memory"]["used"] == 6 * GiB  # per-GPU memory still works
    text = render_table(frame)
    assert text.count("Windows driver does not report per-process GPU memory") == 1


def test_off_wsl_nothing_is_said(fake_nvml):
    fake_nvml.write(FakeState(gpus=[FakeGpu()]))
    src = NvmlSource(wsl=False)
    try:
        doc = frame_to_dict(src.sample(time.time()))
    finally:
        src.close()
    assert doc["wsl"] is False and doc["notices"] == []


def _wsl_frame(pids, used_gpu=20 * GiB):
    """What NVML gives under WSL: the GPU's memory, every process's n/a."""
    import dataclasses

    from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo

    procs = tuple(
        GpuProcess(
            pid=p,
            used=None,
            sm=0,
            info=ProcessInfo(pid=p, start_time=1.0, user="me", name="python", cmdline=("python", "idle.py")),
        )
        for p in pids
    )
    gpu = GpuSample(
        index=0,
        name="NVIDIA GeForce RTX 4090",
        total=24 * GiB,
        used=used_gpu,
        free=24 * GiB - used_gpu,
        processes=procs,
    )
    return lambda t: dataclasses.replace(Frame(time=t, gpus=(gpu,)), wsl=True)


def test_under_wsl_the_alerts_that_need_process_memory_say_they_are_off():
    from vramscope.core.detectors import Diagnostics

    make = _wsl_frame([101, 102])
    engine = Diagnostics()
    for k in range(0, 3600, 30):  # an hour of idle processes at 0 % SM
        engine.feed(make(1000.0 + k))
    alerts = engine.alerts()
    assert [a.kind for a in alerts] == ["wsl"]  # no squatter, no "memory without an owner"
    (wsl,) = alerts
    assert wsl.severity == "info"
    assert "2 process(es) read n/a" in wsl.message
    off = wsl.evidence[0]
    assert "squatter" in off and "per-process memory" in off
    assert "near out of memory" in wsl.evidence[1]


def test_under_wsl_near_oom_still_works():
    from vramscope.core.detectors import Diagnostics

    make = _wsl_frame([101], used_gpu=int(23.8 * GiB))
    engine = Diagnostics()
    for k in range(0, 300, 5):
        engine.feed(make(1000.0 + k))
    kinds = {a.kind for a in engine.alerts()}
    assert "wsl" in kinds and "near_oom" in kinds


def test_off_wsl_no_wsl_alert():
    import dataclasses

    from vramscope.core.detectors import Diagnostics

    frame = dataclasses.replace(_wsl_frame([101])(1000.0), wsl=False)
    assert [a.kind for a in Diagnostics().feed(frame)] == []
