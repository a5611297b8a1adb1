"""NvmlSource.sample_devices through the real pynvml against the fake
libnvidia-ml.so.1: the GPUs' own figures before the first pass, their
processes marked not read yet, and the pass after it as if it had not run."""

from __future__ import annotations

import dataclasses
import time

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.sources.all_gpus import AllGpusSource


def test_the_first_look_has_each_gpus_figures_and_no_processes_yet(fake_nvml, source, sleepers):
    a, b = sleepers(2)
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(
                    name="GPU A",
                    used=5 * GiB,
                    utilization=(77, 30),
                    temperature=66,
                    processes=[FakeProcess(a, GiB, sm=87)],
                ),
                FakeGpu(name="GPU B", used=9 * GiB, processes=[FakeProcess(b, 2 * GiB, sm=40)]),
            ]
        )
    )
    look = source.sample_devices(time.time())
    whole = source.sample(time.time())
    assert [g.name for g in look.gpus] == ["GPU A", "GPU B"]
    assert all(g.processes_pending and g.processes == () for g in look.gpus)
    for seen, full in zip(look.gpus, whole.gpus):  # the same GPU figures the pass gives
        assert not full.processes_pending and full.processes
        bare = dataclasses.replace(full, processes=(), processes_pending=True, mig_mode=seen.mig_mode)
        assert seen == bare
    assert look.driver_version == whole.driver_version == "550.54.14"
    # the pass after the first look reads the processes as a first pass does (SM % included)
    assert [p.sm for p in whole.gpus[0].processes] == [87]
    assert [p.used for p in whole.gpus[1].processes] == [2 * GiB]


def test_a_lost_gpu_is_said_in_the_first_look_too(fake_nvml, source):
    fake_nvml.write(FakeState(gpus=[FakeGpu(name="GPU A", used=GiB), FakeGpu(name="GPU B", lost=True)]))
    look = source.sample_devices(time.time())
    assert look.gpus[0].used == GiB and look.gpus[0].error is None
    assert look.gpus[1].error == "GPU is lost"


def test_no_driver_no_first_look(fake_nvml, source):
    fake_nvml.write(FakeState(gpus=[FakeGpu()], driver_loaded=False))
    assert source.sample_devices(time.time()) is None
    assert source.sample(time.time()).error  # the pass says why


def test_the_whole_machine_source_looks_through_nvml(fake_nvml):
    fake_nvml.write(FakeState(gpus=[FakeGpu(name="GPU A", used=3 * GiB)]))
    src = AllGpusSource()
    try:
        look = src.sample_devices(time.time())
        assert [(g.name, g.used, g.processes_pending) for g in look.gpus] == [("GPU A", 3 * GiB, True)]
    finally:
        src.close()
