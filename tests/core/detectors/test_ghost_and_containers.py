"""Ghost PIDs, a monitor inside a container, and squatters that live in containers."""

from __future__ import annotations

import dataclasses

from vramscope.core.detectors import Diagnostics
from vramscope.core.detectors.jupyter import NotebookHint
from vramscope.core.samples import Container, DeviceHolder, Frame, ProcessInfo

from .scenarios import T0, GiB, frame, gpu, proc


def no_finder(pid, conn):
    return NotebookHint(None, "test: no server")


def kinds(alerts, kind):
    return [a for a in alerts if a.kind == kind]


def with_view(f: Frame, host_pids, holders=()) -> Frame:
    return dataclasses.replace(f, host_pids=host_pids, device_holders=tuple(holders))


def ghost_proc(pid, used):
    return proc(pid, used, sm=None, cmd=None, user=None, start=None, visibility="no-such-process")


def test_ghost_is_flagged_at_once_with_the_amount_and_how_to_find_the_holder():
    holder = DeviceHolder(
        ProcessInfo(pid=5150, user="bob", cmdline=("python", "serve.py")), ("/dev/nvidia0", "/dev/nvidiactl")
    )
    f = with_view(frame(0, [gpu([proc(1, 2 * GiB, sm=50), ghost_proc(666, 6 * GiB)])]), True, [holder])
    [alert] = kinds(Diagnostics(notebook_finder=no_finder).feed(f), "ghost")
    assert alert.pid == 666 and alert.gpu == 0 and alert.severity == "warning"
    assert "still holds 6.0 GiB on GPU 0 for a process that no longer exists" in alert.message
    assert "fuser -v /dev/nvidia*" in alert.fix and "lsof /dev/nvidia*" in alert.fix
    assert "-i 0" in alert.fix  # the last resort names this GPU
    assert any("pid 5150 (python serve.py) holds /dev/nvidia0, /dev/nvidiactl" in e for e in alert.evidence)
    assert alert.frees == 6 * GiB


def test_ghost_with_unknown_memory_says_so_not_zero():
    f = with_view(frame(0, [gpu([ghost_proc(666, None)], used=3 * GiB)]), True)
    [alert] = kinds(Diagnostics(notebook_finder=no_finder).feed(f), "ghost")
    assert "an unknown amount" in alert.message and "0 B" not in alert.message


def test_not_a_ghost_hidden_exited_or_visible_processes():
    engine = Diagnostics(notebook_finder=no_finder)
    hidden = proc(7, 3 * GiB, visibility="not-visible", cmd=None, user=None)
    zombie = proc(8, GiB, status="zombie", visibility="exited")
    alive = proc(9, GiB, sm=40)
    for host in (True, False, None):
        f = with_view(frame(0, [gpu([hidden, zombie, alive], util=40)]), host)
        assert kinds(engine.feed(f), "ghost") == []


def test_a_ghost_is_not_also_called_a_squatter():
    engine = Diagnostics(notebook_finder=no_finder)
    alerts = []
    for t in range(0, 900, 60):
        alerts = engine.feed(with_view(frame(t, [gpu([ghost_proc(666, 6 * GiB)], util=0)]), True))
    assert kinds(alerts, "squatter") == [] and len(kinds(alerts, "ghost")) == 1


def test_inside_a_container_it_is_said_once_with_the_fix():
    hidden = [proc(p, GiB, visibility="not-visible", cmd=None, user=None) for p in (101, 102, 103)]
    f = with_view(frame(0, [gpu(hidden[:2], index=0), gpu(hidden[2:], index=1)]), False)
    engine = Diagnostics(notebook_finder=no_finder)
    engine.feed(f)
    alerts = engine.feed(dataclasses.replace(f, time=T0 + 60))
    [notice] = kinds(alerts, "in_container")
    assert "inside a container without the host's PID namespace" in notice.message
    assert "3 process(es)" in notice.message
    assert "--pid=host" in notice.fix and "hostPID: true" in notice.fix
    assert kinds(alerts, "unattributed_memory") == []  # not said a second time per GPU


def test_no_container_notice_on_the_host_or_with_nothing_hidden():
    engine = Diagnostics(notebook_finder=no_finder)
    hidden = proc(101, GiB, visibility="not-visible", cmd=None, user=None)
    assert kinds(engine.feed(with_view(frame(0, [gpu([hidden])]), True)), "in_container") == []
    assert kinds(engine.feed(with_view(frame(0, [gpu([hidden])]), None)), "in_container") == []
    visible = proc(5, GiB, sm=30)
    assert kinds(engine.feed(with_view(frame(0, [gpu([visible], util=30)]), False)), "in_container") == []


def in_container(p, container, ns_pid=1):
    return dataclasses.replace(p, info=dataclasses.replace(p.info, container=container, ns_pid=ns_pid))


def test_squatter_in_a_container_names_the_container_to_stop():
    idle = in_container(proc(31, 4 * GiB, sm=0), Container("docker", "ab" * 32, name="trainer"))
    engine = Diagnostics(notebook_finder=no_finder)
    alerts = []
    for t in range(0, 420, 30):
        alerts = engine.feed(frame(t, [gpu([idle], util=0)]))
    [alert] = kinds(alerts, "squatter")
    assert "`docker stop trainer`" in alert.fix
    assert any("runs in docker trainer as pid 1 there" in e for e in alert.evidence)


def test_squatter_on_the_host_has_no_container_advice():
    engine = Diagnostics(notebook_finder=no_finder)
    alerts = []
    for t in range(0, 420, 30):
        alerts = engine.feed(frame(t, [gpu([proc(31, 4 * GiB, sm=0)], util=0)]))
    [alert] = kinds(alerts, "squatter")
    assert "container" not in alert.fix
