"""The window on a shared box: a Container column, memory per user, grouping by
user, and a GPU that sleeps."""

from __future__ import annotations

import dataclasses

from vramscope.core.samples import Container, DeviceHolder, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.units import GiB

from .frames import T0, frame_at
from .helpers import save, table_cell, table_column

CAROL = ProcessInfo(
    pid=6060,
    start_time=T0 - 600,
    user="carol",
    name="python",
    cmdline=("python", "serve.py"),
    container=Container("docker", "3f" * 32, name="llm-server"),
    ns_pid=7,
)


def shared_frames(asleep: bool = False, holders=()):
    out = []
    for k in range(60):
        f = frame_at(k)
        g0 = f.gpus[0]
        g0 = dataclasses.replace(
            g0, processes=g0.processes + (GpuProcess(pid=6060, used=4 * GiB, sm=12, info=CAROL),)
        )
        g1 = f.gpus[1]
        if asleep:
            g1 = GpuSample(index=1, name=g1.name, uuid=g1.uuid, pci_bus_id="00000000:02:00.0", asleep=True)
        out.append(dataclasses.replace(f, gpus=(g0, g1), device_holders=tuple(holders)))
    return out


def test_container_column_names_the_container_and_the_pid_inside(make_window, artifacts_dir):
    w = make_window(shared_frames())
    assert table_cell(w, 6060, "Container") == "docker llm-server (pid 7 inside)"
    assert table_cell(w, 4242, "Container") == ""
    save(w, artifacts_dir, "containers-users-1400x900.png")


def test_memory_by_user_and_grouping(make_window, artifacts_dir):
    w = make_window(shared_frames())
    totals = w.table.notes.users.text()
    # alice at k=59: trainer 14 GiB + kernel 3 GiB on GPU 0 (bob's job has ended)
    assert totals.startswith("Memory by user:  alice 17.00 GiB on GPU 0")
    assert "carol 4.00 GiB on GPU 0" in totals
    assert "unknown 1.00 GiB on GPU 1" in totals  # the access-denied process
    assert not _grouped(table_column(w, "User"))  # by memory: alice, carol, alice, ...
    w.table.group_by_user.setChecked(True)
    users = table_column(w, "User")
    # sorted by memory, alice's two rows would straddle carol's; grouped they are together
    assert _grouped(users) and users.count("alice") == 2
    w.resize(1024, 700)
    save(w, artifacts_dir, "containers-users-grouped-1024x700.png")


def _grouped(values):
    seen, last = set(), None
    for v in values:
        if v != last and v in seen:
            return False
        seen.add(v)
        last = v
    return True


def test_an_asleep_gpu_is_shown_asleep_not_as_an_error(make_window, artifacts_dir):
    w = make_window(shared_frames(asleep=True))
    card = w.gpu_panel.cards[1]
    assert card.asleep.isVisible() and not card.error.isVisible()
    assert "not queried until it wakes" in card.asleep.text()
    assert card.values["processes"].text() == "n/a"
    save(w, artifacts_dir, "gpu-asleep-1400x900.png")


def test_processes_holding_the_device_unlisted_are_named(make_window, artifacts_dir):
    holder = DeviceHolder(
        ProcessInfo(pid=9191, user="dave", cmdline=("python", "old_run.py")),
        ("/dev/nvidia0", "/dev/nvidiactl"),
    )
    w = make_window(shared_frames())
    assert not w.table.notes.holders.isVisible()
    w = make_window(shared_frames(holders=[holder]))
    assert w.table.notes.holders.isVisible()
    assert "pid 9191 dave (python old_run.py)" in w.table.notes.holders.text()
    save(w, artifacts_dir, "device-holders-1400x900.png")


def test_a_user_name_with_markup_or_escapes_is_shown_as_written(make_window):
    """User names are strangers' text: the totals line never renders them as HTML
    or passes a terminal escape through (as the table's User cells)."""
    mallory = dataclasses.replace(CAROL, pid=6161, user="<b>mal</b>\x1b[31m", container=None, ns_pid=None)
    frames = [
        dataclasses.replace(
            f,
            gpus=(
                dataclasses.replace(
                    f.gpus[0], processes=f.gpus[0].processes + (GpuProcess(pid=6161, used=GiB, info=mallory),)
                ),
            )
            + f.gpus[1:],
        )
        for f in shared_frames()
    ]
    w = make_window(frames)
    from PySide6.QtCore import Qt

    assert w.table.notes.users.textFormat() == Qt.TextFormat.PlainText
    assert "<b>mal</b>\\x1b[31m 1.00 GiB on GPU 0" in w.table.notes.users.text()
    assert "\x1b" not in w.table.notes.users.text()


def test_jobs_and_pods_in_the_table_and_their_totals_beside_the_users(make_window, artifacts_dir):
    from vramscope.core.processes.slurm_jobs import SlurmJob

    job = SlurmJob(12345, "0", 1001, user="dave", name="train-llama")
    pod = Container("containerd", "c0" * 32, name="trainer", pod="trainer-7f9c", namespace="ml-team")
    ranks = [
        ProcessInfo(
            pid=7000 + r,
            start_time=T0 - 900,
            user="dave",
            name="python",
            cmdline=("python", "train.py", f"--rank={r}"),
            ppid=1,
            slurm=job,
        )
        for r in range(2)
    ]
    in_pod = dataclasses.replace(CAROL, pid=7100, user="root", container=pod, ns_pid=1)
    frames = []
    for f in shared_frames():
        g0, g1 = f.gpus
        g0 = dataclasses.replace(
            g0,
            processes=g0.processes
            + (
                GpuProcess(pid=7000, used=6 * GiB, sm=80, info=ranks[0]),
                GpuProcess(pid=7100, used=2 * GiB, info=in_pod),
            ),
        )
        g1 = dataclasses.replace(
            g1, processes=g1.processes + (GpuProcess(pid=7001, used=5 * GiB, sm=80, info=ranks[1]),)
        )
        frames.append(dataclasses.replace(f, gpus=(g0, g1)))
    w = make_window(frames)
    totals = w.table.notes.users.text().splitlines()
    assert (
        totals[1] == "Memory by Slurm job:  12345 · dave · train-llama 11.00 GiB (GPU 0: 6.00, GPU 1: 5.00)"
    )
    assert totals[2] == "Memory by pod:  ml-team/trainer-7f9c 2.00 GiB on GPU 0"
    assert table_cell(w, 7100, "Container") == "pod ml-team/trainer-7f9c · container trainer (pid 1 inside)"
    # the job's two ranks on two GPUs are one row, the job named once
    names = table_column(w, "Name")
    assert any("slurm job 12345 · dave · train-llama ×2" in n for n in names), names
    save(w, artifacts_dir, "jobs-and-pods-1400x900.png")
