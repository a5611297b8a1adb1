"""The ranks of one distributed job together in the agents tab: grouped by
rendezvous (or torchrun parent), what each holds, the imbalance, and the rank
that holds much more than the others named -- and not named when the ranks are
even; screenshots on the busy machine at 1400x900 and 1024x700."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from vramscope.core.processes.rank_groups import jobs
from vramscope.agent.protocol import EventKind
from vramscope.core.samples import AgentBuckets, AgentDevice, AgentEvent, AgentReport
from vramscope.core.units import GiB, MiB
from vramscope.sources.demo.busy_demo import BusyWorkstation

T0 = 1_800_000_000.0


def _rank(rank, reserved, rendezvous="10.0.0.5:29500", world=4, pid=None, connected=True):
    return AgentReport(
        pid=pid or 5000 + rank,
        start_time=T0,
        rank=rank,
        world_size=world,
        rendezvous=rendezvous,
        connected=connected,
        devices=(
            AgentDevice(device="cuda:0", reserved=reserved, buckets=AgentBuckets(outside_pytorch=500 * MiB)),
        ),
    )


def test_a_rank_holding_much_more_is_named_and_even_ranks_are_not():
    even = [_rank(r, 20 * GiB + r * 50 * MiB) for r in range(4)]
    (job,) = jobs(even + [AgentReport(pid=77, start_time=T0)])  # a lone process: no job
    assert [r.rank for r in job.ranks] == [0, 1, 2, 3] and not job.heavy
    assert job.held[0] == 20 * GiB + 500 * MiB
    assert job.imbalance < 0.01
    heavy = even[:3] + [_rank(3, 31 * GiB)]
    (job,) = jobs(heavy)
    assert [h[0] for h in job.heavy] == [3]
    assert "rank 3 holds" in job.text() and "4 of 4 ranks here" in job.text()


def test_two_jobs_stay_apart_and_ended_ranks_leave_their_job():
    a = [_rank(r, 8 * GiB, "h:1") for r in range(2)]
    b = [_rank(r, 8 * GiB, "h:2", pid=6000 + r) for r in range(2)]
    ended = _rank(1, 8 * GiB, "h:1", pid=7001, connected=False)
    found = jobs(a + b + [ended])
    assert sorted(j.key for j in found) == ["rendezvous h:1", "rendezvous h:1 (ended)", "rendezvous h:2"]
    assert [len(j.ranks) for j in found] == [2, 2, 1]


def test_the_sharded_figures_per_rank_are_said():
    ranks = [
        dataclasses.replace(_rank(r, 8 * GiB, world=2), sharded={"fsdp_unsharded": {"cuda:0": r * MiB}})
        for r in range(2)
    ]
    (job,) = jobs(ranks)
    assert "FSDP all-gathered now r0 0 B / r1 1.0 MiB" in job.text()


class RankedBusy(BusyWorkstation):
    """The busy machine with train.py as rank 0 of a 3-rank job; ranks 1 and 2 beside
    it (rank 2 holding 6 GiB more: its shard of the data is longer); a minute in,
    the process group is created and outside PyTorch grows by NCCL's 300 MiB."""

    PG_AT = 60.0

    def sample(self, now):
        frame = super().sample(now)
        agents = list(frame.agents)
        train = next((r for r in agents if r.devices and r.devices[0].device.startswith("cuda")), None)
        if train is None:
            return frame
        i = agents.index(train)
        made = []
        nccl = now - T0 >= self.PG_AT
        events = train.events
        if now - T0 == self.PG_AT:
            events += (AgentEvent(EventKind.PROCESS_GROUP_INIT, now - 0.5, {"backend": "nccl"}),)
        for rank, extra in ((0, 0), (1, 64 * MiB), (2, 6 * GiB)):
            dev = train.devices[0]
            b = dev.buckets
            if b is not None and b.outside_pytorch is not None and nccl:
                b = dataclasses.replace(b, outside_pytorch=b.outside_pytorch + 300 * MiB)
            dev = dataclasses.replace(dev, reserved=(dev.reserved or 0) + extra, buckets=b)
            made.append(
                dataclasses.replace(
                    train,
                    pid=train.pid + rank * 7,
                    rank=rank,
                    world_size=3,
                    rendezvous="127.0.0.1:29500",
                    devices=(dev,),
                    events=events,
                )
            )
        agents[i : i + 1] = made
        return dataclasses.replace(frame, agents=tuple(agents))


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_the_ranks_of_a_job_together_on_the_busy_machine(qapp, qtbot, tmp_path, artifacts_dir, size):
    from vramscope.core.settings.user_settings import Settings
    from vramscope.ui.qt import theme
    from vramscope.ui.agents.agent_panel import AgentPanel
    from vramscope.ui.agents.agent_ranks import JobHeader, JobSlot
    from vramscope.ui.window.app import build_window

    theme.apply(qapp)
    args = argparse.Namespace(
        demo=True,
        interval=1.0,
        window="10m",
        record=False,
        read_only=False,
        prometheus=None,
        file=None,
        theme=None,
    )
    settings = Settings(str(tmp_path / "s.toml"))
    settings.merge_args(args)
    feed, window = build_window(
        args, source=RankedBusy(seed=1, start_time=T0), start=False, poll_ms=60_000, settings=settings
    )
    qtbot.addWidget(window)
    try:
        window.resize(*size)
        window.show()
        for k in range(180):
            feed.sampler.sample_once(T0 + k)
        index = next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "PyTorch agents")
        window.tabs.setCurrentIndex(index)
        window.refresh(force=True)
        qtbot.wait(50)
        panel = window.findChild(AgentPanel)
        slots = [k for k in panel.order if isinstance(k, JobSlot)]
        assert len(slots) == 1
        at = panel.order.index(slots[0])
        ranks = panel.order[at + 1 : at + 4]
        assert [panel._pending[0][k].rank for k in ranks] == [0, 1, 2]  # together, in rank order
        header = panel.views[slots[0]]
        assert isinstance(header, JobHeader) and header.isVisible()
        text = header.text()
        assert "3 of 3 ranks here" in text and "rank 2 holds" in text and "rank 1 holds" not in text
        # outside PyTorch: its baseline, and the jump named by the event that came with it
        view = panel.views[ranks[0]]
        device = next(iter(view.devices.values()))
        said = device.phase_label.text()
        assert "Outside PyTorch: baseline" in said and "+300.0 MiB with process-group init" in said
        assert len(device.outside._lines) == 1
        window.grab().save(str(artifacts_dir / f"agents-ranks-{size[0]}x{size[1]}.png"))
    finally:
        window.services.close()


def test_status_json_carries_the_job_and_each_rank_s_figures():
    from vramscope.core.samples import Frame
    from vramscope.core.status.status_report import frame_to_dict

    ranks = [
        dataclasses.replace(
            _rank(r, (30 if r == 1 else 20) * GiB, world=2),
            measured_input={"batch": 8, "seq": 512},
            sharded={"fsdp_unsharded": {"cuda:0": 0}},
        )
        for r in range(2)
    ]
    doc = frame_to_dict(Frame(time=T0, gpus=(), agents=tuple(ranks)))
    (job,) = doc["jobs"]
    assert [r["rank"] for r in job["ranks"]] == [0, 1] and job["heavy"][0]["rank"] == 1
    agent = doc["agents"][0]
    assert agent["rendezvous"] == "10.0.0.5:29500" and agent["world_size"] == 2
    assert agent["input"] == {"batch": 8, "seq": 512} and agent["sharded"]["fsdp_unsharded"] == {"cuda:0": 0}
