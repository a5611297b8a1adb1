"""Squatter rules on hand-built frames: what is flagged, when, and what is not."""

from __future__ import annotations

from vramscope.core.detectors import Diagnostics, DiagnosticSettings
from vramscope.core.detectors.jupyter import NotebookHint

from .scenarios import GiB, MiB, frame, gpu, proc

KERNEL_CMD = (
    "/usr/bin/python3",
    "-m",
    "ipykernel_launcher",
    "-f",
    "/home/alice/.local/share/jupyter/runtime/kernel-1a2b-3c.json",
)


def run(engine, seconds, make_gpus, step=10):
    alerts = []
    for t in range(0, seconds + 1, step):
        alerts = engine.feed(frame(t, make_gpus(t)))
    return alerts


def no_finder(pid, conn):
    return NotebookHint(None, "test: no server")


def squatters(alerts):
    return [a for a in alerts if a.kind == "squatter"]


def test_idle_process_is_flagged_after_idle_minutes_not_before():
    engine = Diagnostics(notebook_finder=no_finder)
    idle = lambda t: [gpu([proc(4242, 2 * GiB, sm=0)], util=0)]  # noqa: E731
    assert squatters(run(engine, 290, idle)) == []
    [alert] = squatters(run(engine, 310, idle, step=310))  # t=310 s: idle since t=0
    assert alert.pid == 4242 and alert.frees == 2 * GiB
    assert "reasons" in alert.data and alert.data["reasons"] == ["idle"]
    assert "2.0 GiB" in alert.message and "5 min" in alert.message
    assert any("0 % SM since" in e for e in alert.evidence)
    assert "End process" in alert.fix


def test_busy_training_process_is_not_a_squatter():
    engine = Diagnostics(notebook_finder=no_finder)
    busy = lambda t: [gpu([proc(4242, 20 * GiB, sm=85)], util=90)]  # noqa: E731
    assert squatters(run(engine, 3600, busy, step=30)) == []


def test_small_idle_process_is_below_threshold_until_threshold_lowered():
    small = lambda t: [gpu([proc(7, 100 * MiB, sm=0)], util=0)]  # noqa: E731
    assert squatters(run(Diagnostics(notebook_finder=no_finder), 900, small, step=60)) == []
    engine = Diagnostics(
        DiagnosticSettings().with_overrides(squatter_min_bytes=64 * MiB), notebook_finder=no_finder
    )
    assert [a.pid for a in squatters(run(engine, 900, small, step=60))] == [7]


def test_one_active_moment_restarts_the_idle_clock():
    engine = Diagnostics(notebook_finder=no_finder)

    def gpus(t):
        return [gpu([proc(9, GiB, sm=40 if t == 200 else 0)], util=0)]

    assert squatters(run(engine, 480, gpus)) == []  # idle only since t=210
    [alert] = squatters(run(engine, 520, gpus, step=520))
    assert any("last SM activity" in e for e in alert.evidence)


def test_no_per_process_sm_uses_the_gpu_figure():
    # NVML gave no per-process SM at all: a GPU at 0 % proves idleness, a busy one does not
    idle_gpu = lambda t: [gpu([proc(5, GiB, sm=None)], util=0)]  # noqa: E731
    busy_gpu = lambda t: [gpu([proc(5, GiB, sm=None)], util=70)]  # noqa: E731
    assert squatters(run(Diagnostics(notebook_finder=no_finder), 600, idle_gpu, step=60))
    assert squatters(run(Diagnostics(notebook_finder=no_finder), 600, busy_gpu, step=60)) == []


def test_missing_sample_next_to_a_busy_process_counts_as_idle():
    def gpus(t):
        return [gpu([proc(5, 8 * GiB, sm=90), proc(6, 3 * GiB, sm=None)], util=90)]

    flagged = squatters(run(Diagnostics(notebook_finder=no_finder), 600, gpus, step=60))
    assert [a.pid for a in flagged] == [6]


def test_jupyter_kernel_flagged_with_connection_file_and_notebook():
    asked = []

    def finder(pid, conn):
        asked.append((pid, conn))
        return NotebookHint("work/explore.ipynb", "from the Jupyter server at http://localhost:8888/")

    engine = Diagnostics(notebook_finder=finder)
    kernel = lambda t: [gpu([proc(77, 3 * GiB, sm=0, cmd=KERNEL_CMD)], util=0)]  # noqa: E731
    assert squatters(run(engine, 540, kernel, step=60)) == []  # reading between cells, maybe
    [alert] = squatters(run(engine, 660, kernel, step=120))
    assert alert.severity == "info"  # idle 11 min: listed
    assert alert.connection_file == KERNEL_CMD[-1]
    assert alert.message.startswith("Jupyter kernel (77) on GPU 0 holds 3.0 GiB")
    assert any("work/explore.ipynb" in e for e in alert.evidence)
    assert "Shut it down from Jupyter" in alert.fix
    [alert] = squatters(run(engine, 1900, kernel, step=1900))
    assert alert.severity == "warning"  # idle >= kernel_warn_minutes
    assert alert.data["reasons"] == ["jupyter_kernel"]
    assert asked == [(77, KERNEL_CMD[-1])]  # looked up once per kernel identity


def test_busy_jupyter_kernel_is_not_flagged():
    kernel = lambda t: [gpu([proc(77, 3 * GiB, sm=60, cmd=KERNEL_CMD)], util=60)]  # noqa: E731
    assert squatters(run(Diagnostics(notebook_finder=no_finder), 900, kernel, step=30)) == []


def test_run_orphaned_while_watched_is_flagged_but_detached_busy_run_is_not():
    # its terminal closed at t=30: the parent was seen alive, then the process was re-parented
    orphan = lambda t: [  # noqa: E731
        gpu(
            [
                proc(
                    11,
                    4 * GiB,
                    sm=0,
                    parent_alive=t < 30,
                    ppid=900 if t < 30 else 1,
                )
            ],
            util=0,
        )
    ]
    [alert] = squatters(run(Diagnostics(notebook_finder=no_finder), 90, orphan))
    assert alert.data["reasons"] == ["orphan"]
    assert any("parent process gone while watched" in e for e in alert.evidence)
    assert "crashed or abandoned" in alert.fix
    nohup_run = lambda t: [  # noqa: E731
        gpu(
            [
                proc(
                    12,
                    4 * GiB,
                    sm=95,
                    parent_alive=t < 30,
                    ppid=900 if t < 30 else 1,
                )
            ],
            util=95,
        )
    ]
    assert squatters(run(Diagnostics(notebook_finder=no_finder), 900, nohup_run, step=30)) == []


def test_a_service_is_not_a_squatter():
    """Parent PID 1 / systemd / tini / dumb-init / a container's init from the first pass:
    a service started that way (a model server under systemd), waiting for requests --
    neither "a crashed or abandoned previous run" nor an idle squatter, even after an hour."""
    service = lambda t: [  # noqa: E731
        gpu(
            [
                proc(
                    14,
                    4 * GiB,
                    sm=0,
                    parent_alive=False,
                    ppid=1,
                    cmd=("/srv/embedder/bin/python", "serve_embeddings.py"),
                )
            ],
            util=0,
        )
    ]
    engine = Diagnostics(notebook_finder=no_finder)
    assert squatters(run(engine, 3600, service, step=60)) == []
    assert engine.watching() == []  # not on its way to an alert either
    # what must still be flagged: a process whose parent went away while watched
    nohup = lambda t: [  # noqa: E731
        gpu([proc(15, 4 * GiB, sm=0, parent_alive=t < 30, ppid=900 if t < 30 else 1)], util=0)
    ]
    [alert] = squatters(run(Diagnostics(notebook_finder=no_finder), 1200, nohup, step=30))
    assert "orphan" in alert.data["reasons"]


def test_zombie_holding_memory_is_flagged_at_once():
    z = lambda t: [  # noqa: E731
        gpu(
            [proc(13, GiB, sm=None, status="zombie", visibility="exited", ppid=500)],
            util=30,
        )
    ]
    [alert] = squatters(Diagnostics(notebook_finder=no_finder).feed(frame(0, z(0))))
    assert alert.data["reasons"] == ["zombie"] and "parent (pid 500)" in alert.fix


def test_reused_pid_is_a_new_process_with_a_new_idle_clock():
    engine = Diagnostics(notebook_finder=no_finder)

    def gpus(t):
        start = 1000.0 if t < 300 else 2000.0  # same PID, another process from t=300
        return [gpu([proc(21, 2 * GiB, sm=0, start=start)], util=0)]

    alerts = squatters(run(engine, 420, gpus, step=30))
    assert alerts == []  # the new process has been idle only 2 min


def test_unattributed_memory_and_hidden_pids():
    engine = Diagnostics(notebook_finder=no_finder)

    def gpus(t):
        visible = proc(1, 2 * GiB, sm=80)
        hidden = proc(2, 3 * GiB, sm=None, visibility="not-visible", cmd=None, user=None)
        return [gpu([visible, hidden], used=10 * GiB, util=80)]

    assert [a for a in engine.feed(frame(0, gpus(0))) if a.kind == "unattributed_memory"] == []
    [alert] = [a for a in engine.feed(frame(40, gpus(40))) if a.kind == "unattributed_memory"]
    assert "another container or of another user" in alert.message
    assert alert.data["hidden_pids"] == [2]
    assert alert.data["unlisted"] == 5 * GiB
    assert alert.data["total"] == 8 * GiB
    # the hidden PID is reported here only, not also as an idle squatter nobody can act on
    later = run_from(engine, 50, 600, gpus, step=50)
    assert [a.kind for a in later] == ["unattributed_memory"]


def test_unattributed_not_flagged_for_a_gpu_whose_processes_are_still_being_read():
    import dataclasses

    engine = Diagnostics(notebook_finder=no_finder)

    def first_look(t):  # the sampler's first look: 10 GiB used, its processes not read yet
        return [dataclasses.replace(gpu([], used=10 * GiB, util=80), processes_pending=True)]

    assert [a for a in run(engine, 600, first_look, step=60) if a.kind == "unattributed_memory"] == []


def test_unattributed_not_flagged_for_a_normal_driver_overhead():
    engine = Diagnostics(notebook_finder=no_finder)
    normal = lambda t: [gpu([proc(1, 6 * GiB, sm=80)], util=80)]  # used = listed + 300 MiB  # noqa: E731
    assert [a for a in run(engine, 600, normal, step=60) if a.kind == "unattributed_memory"] == []


def test_acknowledge_and_mute_per_process_identity():
    engine = Diagnostics(notebook_finder=no_finder)
    other = ("python", "eval.py")  # (two of one command under one shell would be a job's ranks)
    idle = lambda t: [gpu([proc(31, 2 * GiB, sm=0), proc(32, 2 * GiB, sm=0, start=5.0, cmd=other)], util=0)]  # noqa: E731
    alerts = squatters(run(engine, 400, idle, step=100))
    assert sorted(a.pid for a in alerts) == [31, 32]
    a31 = next(a for a in alerts if a.pid == 31)
    engine.acknowledge(a31)
    engine.mute(next(a for a in alerts if a.pid == 32).identity)
    assert squatters(engine.feed(frame(500, idle(500)))) == []
    assert len(squatters(engine.alerts(include_hidden=True))) == 2
    # The acknowledged one comes back when it gets worse (kernel info -> warning works alike);
    # here: when it clears and reappears.
    engine.feed(frame(510, [gpu([proc(32, 2 * GiB, sm=0, start=5.0, cmd=other)], util=0)]))
    back = squatters(run_from(engine, 520, 900, idle))
    assert [a.pid for a in back] == [31]  # 32 stays muted


def run_from(engine, start, end, make_gpus, step=30):
    alerts = []
    for t in range(start, end + 1, step):
        alerts = engine.feed(frame(t, make_gpus(t)))
    return alerts


def test_an_idle_server_of_no_known_engine_is_not_called_a_crashed_run():
    cmd = ("python", "-m", "embed_server", "--port", "8100", "--model", "bge-large-en-v1.5")
    idle = lambda t: [gpu([proc(38211, 9 * GiB, sm=0, cmd=cmd)], util=0)]  # noqa: E731
    [alert] = squatters(run(Diagnostics(notebook_finder=no_finder), 310, idle))
    assert "A finished or crashed" not in alert.fix and "server waiting for requests" in alert.fix
    train = lambda t: [gpu([proc(4242, 9 * GiB, sm=0)], util=0)]  # noqa: E731
    [plain] = squatters(run(Diagnostics(notebook_finder=no_finder), 310, train))
    assert "A finished or crashed" in plain.fix
