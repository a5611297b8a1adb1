"""An agent process on a MIG slice (CUDA_VISIBLE_DEVICES=MIG-...) is judged
against its slice: the slice's memory, not the whole card's."""

from __future__ import annotations

from vramscope.core.detectors.agentmap import gpu_for_device, headroom, slice_for_device
from vramscope.core.samples import (
    AgentDevice,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
    MigSlice,
)

GiB = 1 << 30
SLICE = "MIG-5c1f8a3e-0d2b-5b1e-9c47-3a0d2e9f1b11"
OTHER = "MIG-7a2b9c4d-1e3f-5a6b-8c7d-9e0f1a2b3c4d"


def lab_frame() -> tuple[Frame, AgentReport]:
    trainer = GpuProcess(pid=4242, used=int(38.5 * GiB), mig_uuid=SLICE)
    neighbour = GpuProcess(pid=5151, used=10 * GiB, mig_uuid=OTHER)
    h100 = GpuSample(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-0f0e0d0c-aaaa-bbbb-cccc-000000000000",
        total=80 * GiB,
        used=49 * GiB,
        free=31 * GiB,
        mig_mode=True,
        processes=(trainer, neighbour),
        slices=(
            MigSlice(
                index=6,
                uuid=SLICE,
                name="NVIDIA H100 80GB HBM3 MIG 3g.40gb",
                profile="3g.40gb",
                gpu_instance_id=1,
                compute_instance_id=0,
                total=40 * GiB,
                used=39 * GiB,
                free=1 * GiB,
                processes=(trainer,),
            ),
            MigSlice(
                index=5,
                uuid=OTHER,
                profile="2g.20gb",
                gpu_instance_id=5,
                compute_instance_id=0,
                total=20 * GiB,
                used=10 * GiB,
                free=10 * GiB,
                processes=(neighbour,),
            ),
        ),
    )
    # torch reports the slice's uuid without NVML's "MIG-" prefix
    dev = AgentDevice(device="cuda:0", gpu_uuid=SLICE[4:], allocated=36 * GiB, reserved=38 * GiB)
    return Frame(time=0.0, gpus=(h100,)), AgentReport(pid=4242, start_time=1.0, devices=(dev,))


def test_the_agent_device_is_found_on_its_slice():
    frame, report = lab_frame()
    found = slice_for_device(frame, report.devices[0])
    assert found is not None
    gpu, mig = found
    assert gpu.index == 0 and mig.profile == "3g.40gb"


def test_rules_see_the_slice_memory_not_the_card():
    frame, report = lab_frame()
    gpu = gpu_for_device(frame, report, report.devices[0])
    assert gpu.index == 0  # named as the table names the card
    assert gpu.total == 40 * GiB and gpu.free == 1 * GiB  # but sized as the slice
    assert [p.pid for p in gpu.processes] == [4242]  # the neighbour's slice is not ours
    # 1 GiB free on the slice + 2 GiB of its own cache; the card's 31 GiB free is out of reach
    assert headroom(gpu, report.devices[0]) == 3 * GiB


def test_a_whole_gpu_device_is_still_the_gpu():
    frame, _ = lab_frame()
    plain = GpuSample(
        index=1,
        uuid="GPU-1111",
        total=24 * GiB,
        used=2 * GiB,
        free=22 * GiB,
        processes=(GpuProcess(pid=77, used=2 * GiB),),
    )
    frame = Frame(time=0.0, gpus=frame.gpus + (plain,))
    report = AgentReport(pid=77, start_time=1.0, devices=(AgentDevice(device="cuda:0", gpu_uuid="1111"),))
    gpu = gpu_for_device(frame, report, report.devices[0])
    assert gpu is plain and slice_for_device(frame, report.devices[0]) is None
