"""`status` and the agents: live ones and the last few ended runs of this boot,
ended runs as summaries in JSON, devices named by the GPU they are."""

from __future__ import annotations

import json

from vramscope.core.samples import AgentDevice, AgentEvent, AgentReport, Frame, GpuProcess, GpuSample
from vramscope.core.status_report import ENDED_SHOWN, frame_to_dict, render_table
from vramscope.core.units import GiB

BOOT = 1_700_000_000.0
STEPS = tuple(AgentEvent(kind="step", time=BOOT + k, data={"step": k}) for k in range(500))


def _gpus(pid):
    return (GpuSample(index=0, uuid="GPU-aaaa", name="A", total=24 * GiB, used=GiB),
            GpuSample(index=1, uuid="GPU-bbbb", name="B", total=24 * GiB, used=9 * GiB,
                      processes=(GpuProcess(pid=pid, used=9 * GiB),)))


def test_a_process_on_gpu_1_is_named_by_that_gpu_with_or_without_its_uuid():
    # CUDA_VISIBLE_DEVICES=1: torch calls it cuda:0; the agent sends the GPU's UUID
    for dev in (AgentDevice(device="cuda:0", gpu_uuid="GPU-bbbb", allocated=8 * GiB),
                AgentDevice(device="cuda:0", allocated=8 * GiB)):  # no UUID: where NVML lists it
        frame = Frame(time=BOOT + 900, gpus=_gpus(4242),
                      agents=(AgentReport(pid=4242, start_time=BOOT + 10, devices=(dev,)),))
        assert "cuda:0 (GPU 1): allocated 8.0 GiB" in render_table(frame)
        assert frame_to_dict(frame)["agents"][0]["devices"][0]["gpu"] == 1


def test_status_lists_live_agents_and_only_the_last_ended_runs_of_this_boot():
    live = AgentReport(pid=1, start_time=BOOT + 500, step=40, events=STEPS[:3])
    before_boot = [AgentReport(pid=100 + k, start_time=BOOT - 3600 + k, time=BOOT - 60,
                               connected=False, events=STEPS) for k in range(30)]
    this_boot = [AgentReport(pid=200 + k, start_time=BOOT + 10 * k, time=BOOT + 10 * k + 5,
                             connected=False, step=k, events=STEPS) for k in range(6)]
    frame = Frame(time=BOOT + 900, gpus=_gpus(1), agents=(live, *before_boot, *this_boot))
    table = render_table(frame, boot_time=BOOT)
    listed = [line.split()[1] for line in table.splitlines() if line.startswith("  pid ")]
    assert listed == ["1", "203", "204", "205"]  # live first, then the latest ended
    assert len(listed) == 1 + ENDED_SHOWN
    assert f"+ {30 + 6 - ENDED_SHOWN} earlier ended run(s) (--all-agents" in table
    every = render_table(frame, boot_time=BOOT, every_agent=True)
    assert len([ln for ln in every.splitlines() if ln.startswith("  pid ")]) == 37
    doc = frame_to_dict(frame, boot_time=BOOT)
    assert [a["pid"] for a in doc["agents"]] == [1, 205, 204, 203]
    assert doc["ended_agents_left_out"] == 33
    assert "events" in doc["agents"][0]  # a live agent's new events
    assert all("events" not in a for a in doc["agents"][1:])  # an ended run: its summary
    assert doc["agents"][1]["step"] == 5 and doc["agents"][1]["last_seen"] == BOOT + 55
    assert len(json.dumps(frame_to_dict(frame, boot_time=BOOT, every_agent=True))) < 20_000
