"""What a user would question if it were called a squatter (issue 46), and what must
still be one: a service, a stalled job without the agent, a kernel working on the
CPU, a graphics process whose memory the driver does not report."""

from __future__ import annotations

import dataclasses

from vramscope.core.detectors import Diagnostics
from vramscope.core.detectors.jupyter import NotebookHint

from .scenarios import GiB, frame, gpu, proc

KERNEL = ("/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "/home/alice/kernel-9f.json")


def no_finder(pid, conn):
    return NotebookHint(None, "test: no server")


def feed(make_gpus, seconds, step=30):
    engine = Diagnostics(notebook_finder=no_finder)
    alerts = []
    for t in range(0, seconds + 1, step):
        alerts = engine.feed(frame(t, make_gpus(t)))
    return engine, alerts


def kinds(alerts, pid):
    return sorted(a.kind for a in alerts if a.pid == pid)


def with_cpu(p, percent):
    return dataclasses.replace(p, cpu_percent=percent)


def ranks(sms, ppid=500):
    cmd = ("/venv/bin/python", "-u", "train.py", "--config", "llama.yaml")
    return [proc(600 + r, 6 * GiB, sm=sm, cmd=cmd, ppid=ppid) for r, sm in enumerate(sms)]


def test_a_torchrun_job_stalled_on_its_data_loader_is_a_stall_not_squatters():
    engine, alerts = feed(lambda t: [gpu(ranks([0, 0, 0, 0]), util=0)], 150)
    watched = engine.watching()
    assert len(watched) == 4 and {(w.kind, w.measure) for w in watched} == {("stalled", "job idle")}
    engine, alerts = feed(lambda t: [gpu(ranks([0, 0, 0, 0]), util=0)], 600)
    assert [kinds(alerts, 600 + r) for r in range(4)] == [["stalled"]] * 4
    first = next(a for a in alerts if a.pid == 600)
    assert "one of 4 processes of one job" in first.message
    assert "py-spy dump --pid 600" in first.fix and first.frees is None  # nothing to end
    assert "also pid 601, 602, 603" in " ".join(first.evidence)


def test_one_idle_process_beside_busy_ones_of_its_command_is_still_a_squatter():
    """`python train.py &` left hanging, then run again from the same shell."""
    _, alerts = feed(lambda t: [gpu(ranks([0, 90]), util=90)], 600)
    assert kinds(alerts, 600) == ["squatter"] and kinds(alerts, 601) == []


def test_a_model_server_started_by_systemd_idle_for_an_hour_is_a_service():
    server = ("/opt/embed/bin/python", "-m", "embed_server", "--port", "8100")
    engine, alerts = feed(
        lambda t: [gpu([proc(38211, 9 * GiB, sm=0, cmd=server, ppid=1, parent_alive=False)], util=0)],
        3600,
        step=120,
    )
    assert kinds(alerts, 38211) == [] and engine.watching() == []
    # must still be flagged: a Jupyter kernel whose server went away before it was seen
    kernel = proc(49718, 3 * GiB, sm=0, cmd=KERNEL, ppid=1, parent_alive=False)
    _, alerts = feed(lambda t: [gpu([kernel], util=0)], 3600, step=120)
    assert kinds(alerts, 49718) == ["squatter"]


def test_a_jupyter_kernel_busy_on_a_long_cpu_cell_is_working():
    busy = lambda t: [gpu([with_cpu(proc(77, 3 * GiB, sm=0, cmd=KERNEL), 100.0)], util=0)]  # noqa: E731
    engine, alerts = feed(busy, 3600, step=120)
    assert kinds(alerts, 77) == [] and engine.watching() == []
    # must still be flagged: the same kernel doing nothing, on the GPU or the CPU
    idle = lambda t: [gpu([with_cpu(proc(77, 3 * GiB, sm=0, cmd=KERNEL), 0.3)], util=0)]  # noqa: E731
    _, alerts = feed(idle, 3600, step=120)
    assert kinds(alerts, 77) == ["squatter"]


def test_a_graphics_process_whose_memory_is_not_reported_is_not_watched():
    xorg = dataclasses.replace(proc(1204, None, sm=0, cmd=("/usr/lib/xorg/Xorg", "vt2")), kinds=("graphics",))
    engine, alerts = feed(lambda t: [gpu([xorg], util=0)], 240)
    assert kinds(alerts, 1204) == [] and [w for w in engine.watching() if w.pid == 1204] == []
    # a process that does hold memory is watched on its way to an alert
    engine, _ = feed(lambda t: [gpu([proc(1300, 2 * GiB, sm=0)], util=0)], 240)
    assert [w.pid for w in engine.watching()] == [1300]
