"""`status` and the agents: live ones and the last few ended runs of this boot,
ended runs as summaries in JSON, devices named by the GPU they are."""

from __future__ import annotations

import pytest
import json

from vramscope.core.samples import AgentDevice, AgentEvent, AgentReport, Frame, GpuProcess, GpuSample
from vramscope.core.status.status_report import ENDED_SHOWN, frame_to_dict
from vramscope.core.status.status_table import render_table
from vramscope.core.units import GiB

BOOT = 1_700_000_000.0
STEPS = tuple(AgentEvent(kind="step", time=BOOT + k, data={"step": k}) for k in range(500))


def _gpus(pid):
    return (
        GpuSample(index=0, uuid="GPU-aaaa", name="A", total=24 * GiB, used=GiB),
        GpuSample(
            index=1,
            uuid="GPU-bbbb",
            name="B",
            total=24 * GiB,
            used=9 * GiB,
            processes=(GpuProcess(pid=pid, used=9 * GiB),),
        ),
    )


def test_a_process_on_gpu_1_is_named_by_that_gpu_with_or_without_its_uuid():
    # CUDA_VISIBLE_DEVICES=1: torch calls it cuda:0; the agent sends the GPU's UUID
    for dev in (
        AgentDevice(device="cuda:0", gpu_uuid="GPU-bbbb", allocated=8 * GiB),
        AgentDevice(device="cuda:0", allocated=8 * GiB),
    ):  # no UUID: where NVML lists it
        frame = Frame(
            time=BOOT + 900,
            gpus=_gpus(4242),
            agents=(AgentReport(pid=4242, start_time=BOOT + 10, devices=(dev,)),),
        )
        assert "cuda:0 (GPU 1): allocated 8.0 GiB" in render_table(frame)
        assert frame_to_dict(frame)["agents"][0]["devices"][0]["gpu"] == 1


@pytest.mark.slow
def test_status_lists_live_agents_and_only_the_last_ended_runs_of_this_boot():
    live = AgentReport(pid=1, start_time=BOOT + 500, step=40, events=STEPS[:3])
    before_boot = [
        AgentReport(pid=100 + k, start_time=BOOT - 3600 + k, time=BOOT - 60, connected=False, events=STEPS)
        for k in range(30)
    ]
    this_boot = [
        AgentReport(
            pid=200 + k,
            start_time=BOOT + 10 * k,
            time=BOOT + 10 * k + 5,
            connected=False,
            step=k,
            events=STEPS,
        )
        for k in range(6)
    ]
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


def test_status_carries_each_agents_allocator_figures_and_says_why_one_is_missing():
    from tests.agent import snapshots as S
    from vramscope.agent.allocator.segments import summarize
    from vramscope.core.units import MiB, fmt_bytes
    from vramscope.sources.agents.allocator_input import allocator

    fig = summarize(S.fragmented()["segments"], "cuda:0")
    item = allocator({"t": BOOT + 899, "step": 40, "why": None, "took_ms": 1.0, "devices": [fig]})
    dev = AgentDevice(device="cuda:0", gpu_uuid="GPU-bbbb", allocated=8 * GiB, reserved=9 * GiB)
    measured = AgentReport(pid=4242, start_time=BOOT + 10, devices=(dev,), allocator=item)
    waiting = AgentReport(pid=4243, start_time=BOOT + 20, devices=(dev,))
    frame = Frame(time=BOOT + 900, gpus=_gpus(4242), agents=(measured, waiting))
    doc = json.loads(json.dumps(frame_to_dict(frame)))
    got = {a["pid"]: a["devices"][0]["allocator"] for a in doc["agents"]}
    a = got[4242]
    assert a["free_split"] == 320 * MiB and a["expandable_recovers"] == 240 * MiB
    assert a["largest_free_block"] == 64 * MiB and a["free_segments"] == fig["free_segments"]
    assert a["private_pools"] == {"reserved": 0, "allocated": 0, "segments": 0}
    assert a["step"] == 40 and "map" not in a  # the figures, not the segment map
    b = got[4243]  # no snapshot yet: null, and why
    assert b["free_split"] is None and b["largest_free_block"] is None
    assert "no allocator snapshot" in b["not_reported"]["free_split"]
    table = render_table(frame)
    assert (
        f"allocator at step 40: fragmentation {fmt_bytes(320 * MiB)} (free inside partly used segments)"
        in table
    )
    assert f"largest free block {fmt_bytes(64 * MiB)}" in table
    assert f"expandable_segments:True would recover {fmt_bytes(240 * MiB)}" in table
    assert "allocator: n/a (no allocator snapshot from the agent yet)" in table


def test_status_says_expandable_segments_are_already_on_rather_than_a_null_recovery():
    from tests.agent import snapshots as S
    from vramscope.agent.allocator.segments import summarize
    from vramscope.sources.agents.allocator_input import allocator

    fig = summarize(S.fragmented()["segments"], "cuda:0", expandable=True)
    item = allocator({"t": BOOT, "step": 3, "devices": [fig]})
    dev = AgentDevice(device="cuda:0", allocated=8 * GiB)
    frame = Frame(
        time=BOOT + 900,
        gpus=_gpus(4242),
        agents=(AgentReport(pid=4242, start_time=BOOT + 10, devices=(dev,), allocator=item),),
    )
    a = frame_to_dict(frame)["agents"][0]["devices"][0]["allocator"]
    assert a["expandable_recovers"] is None and "already on" in a["not_reported"]["expandable_recovers"]
    assert "expandable segments already on" in render_table(frame)


def test_an_ended_agent_reads_ended_and_a_broken_one_says_what_broke():
    from vramscope.core.samples import AGENT_ENDED

    ended = AgentReport(pid=4242, start_time=BOOT + 10, connected=False, error=AGENT_ENDED, step=7)
    broken = AgentReport(pid=4343, start_time=BOOT + 20, connected=False, error="protocol 9, want 4", step=1)
    text = render_table(Frame(time=BOOT + 900, gpus=_gpus(4242), agents=(ended, broken)))
    line = {pid: next(x for x in text.splitlines() if f"pid {pid}" in x) for pid in (4242, 4343)}
    assert line[4242].endswith("(ended)") and AGENT_ENDED not in line[4242]
    assert "(protocol 9, want 4)" in line[4343]
    assert ended.problem is None and broken.problem == "protocol 9, want 4"
