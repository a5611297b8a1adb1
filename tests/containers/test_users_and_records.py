"""Per-user totals (status text and JSON, Prometheus) and containers in session files."""

from __future__ import annotations

import sqlite3
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from vramscope.core.export.metrics import serve_metrics
from vramscope.core.samples import Container, Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.session import SessionWriter, open_session
from vramscope.core.status.status_report import frame_to_dict
from vramscope.core.status.status_table import render_table
from vramscope.core.store.store import Store
from vramscope.core.units import GiB
from vramscope.core.processes.user_totals import user_totals

T0 = 1_700_000_000.0
TRAINER = Container("docker", "ab" * 32, name="trainer")


def p(pid, used, user, container=None, ns_pid=None, visibility="ok", **more):
    info = ProcessInfo(
        pid=pid,
        start_time=T0 - pid,
        user=user,
        name="python3",
        cmdline=("python3", f"job{pid}.py"),
        visibility=visibility,
        container=container,
        ns_pid=ns_pid,
        **more,
    )
    return GpuProcess(pid=pid, used=used, sm=10, info=info)


def shared_box() -> Frame:
    g0 = GpuSample(
        index=0,
        name="A100",
        total=80 * GiB,
        used=40 * GiB,
        processes=(
            p(11, 20 * GiB, "alice", TRAINER, 1),
            p(12, 6 * GiB, "bob"),
            p(13, None, "bob"),
            GpuProcess(pid=14, used=3 * GiB, info=ProcessInfo(pid=14, visibility="not-visible")),
        ),
    )
    g1 = GpuSample(index=1, name="A100", total=80 * GiB, used=10 * GiB, processes=(p(15, 10 * GiB, "alice"),))
    return Frame(time=T0, gpus=(g0, g1), source="test", host_pids=True)


def test_user_totals_per_gpu_and_machine():
    totals = {t.user: t for t in user_totals(shared_box())}
    assert list(totals) == ["alice", "bob", None]  # biggest first, unknown owner kept
    assert totals["alice"].used == 30 * GiB and totals["alice"].per_gpu == ((0, 20 * GiB), (1, 10 * GiB))
    assert totals["bob"].used == 6 * GiB and totals["bob"].unreported == 1  # n/a is not 0
    assert totals[None].label == "unknown" and totals[None].used == 3 * GiB


def test_status_json_and_text_carry_users_and_containers():
    f = shared_box()
    doc = frame_to_dict(f)
    assert doc["host_pids"] is True
    assert doc["users"][0] == {
        "user": "alice",
        "used": 30 * GiB,
        "processes": 2,
        "unreported": 0,
        "gpus": [{"gpu": 0, "used": 20 * GiB}, {"gpu": 1, "used": 10 * GiB}],
    }
    proc11 = doc["gpus"][0]["processes"][0]
    assert proc11["container"]["name"] == "trainer" and proc11["container"]["runtime"] == "docker"
    assert proc11["ns_pid"] == 1
    assert doc["gpus"][1]["processes"][0]["container"] is None
    text = render_table(f)
    assert "CONTAINER" in text and "docker trainer (pid 1 inside)" in text
    users = text[text.index("memory by user:") :]
    assert "alice" in users and "30.0 GiB" in users and "GPU 0: 20.0 GiB, GPU 1: 10.0 GiB" in users
    assert "1 process(es) n/a" in users
    assert "unknown" in users


def test_asleep_gpu_in_status():
    asleep = GpuSample(index=0, name="RTX 4060 Laptop GPU", pci_bus_id="00000000:01:00.0", asleep=True)
    f = Frame(time=T0, gpus=(asleep,), source="nvml")
    assert frame_to_dict(f)["gpus"][0]["asleep"] is True
    assert "asleep (runtime-suspended; not queried until it wakes)" in render_table(f)


def test_prometheus_exports_user_totals():
    store = Store()
    store.append(shared_box())
    server = serve_metrics(store, "127.0.0.1:0")
    try:
        text = urllib.request.urlopen(server.url, timeout=5).read().decode()
    finally:
        server.close()
    got = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }
    assert got[("vramscope_user_memory_used_bytes", (("gpu", "0"), ("user", "alice")))] == 20 * GiB
    assert got[("vramscope_user_memory_used_bytes", (("gpu", "1"), ("user", "alice")))] == 10 * GiB
    assert got[("vramscope_machine_user_memory_used_bytes", (("user", "alice"),))] == 30 * GiB
    assert got[("vramscope_machine_user_memory_used_bytes", (("user", "unknown"),))] == 3 * GiB
    assert (
        got[
            (
                "vramscope_gpu_asleep",
                (("gpu", "0"), ("memory", ""), ("name", "A100"), ("uuid", ""), ("vendor", "")),
            )
        ]
        == 0
    )


def test_sessions_keep_container_and_ns_pid(tmp_path):
    path = tmp_path / "s.vramscope"
    w = SessionWriter(path)
    w.on_frame(shared_box())
    w.close()
    with open_session(path) as r:
        procs = {q.pid: q for g in r.frame_at(T0).gpus for q in g.processes}
    assert procs[11].info.container == TRAINER and procs[11].info.ns_pid == 1
    assert procs[15].info.container is None and procs[15].info.ns_pid is None


def test_session_written_before_the_container_columns_still_opens(tmp_path):
    path = tmp_path / "old.vramscope"
    w = SessionWriter(path)
    w.on_frame(shared_box())
    w.close()
    db = sqlite3.connect(path)  # rebuild the processes table as the first format had it
    db.executescript("""
        CREATE TABLE p_old (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, start_time REAL,
            user TEXT, name TEXT, command TEXT, ppid INTEGER, first_seen REAL);
        INSERT INTO p_old SELECT id, pid, start_time, user, name, command, ppid, first_seen
            FROM processes;
        DROP TABLE processes;
        ALTER TABLE p_old RENAME TO processes;""")
    db.close()
    with open_session(path) as r:
        assert not r.problems
        procs = {q.pid: q for g in r.frame_at(T0).gpus for q in g.processes}
    assert procs[11].info.user == "alice" and procs[11].info.container is None
    assert procs[11].used == 20 * GiB


def test_containers_users_and_holders_travel_over_the_stream():
    """`vramscope --host` reads frames from `vramscope stream`: nothing of this is lost."""
    from vramscope.core.samples import DeviceHolder
    from vramscope.core.stream.codec import frame_from_wire, frame_to_wire

    holder = DeviceHolder(ProcessInfo(pid=3, user="dave"), ("/dev/nvidia0",))
    sent = Frame(time=T0, gpus=shared_box().gpus, host_pids=False, device_holders=(holder,))
    got = frame_from_wire(frame_to_wire(sent))
    assert got.gpus[0].processes[0].info.container == TRAINER
    assert got.gpus[0].processes[0].info.ns_pid == 1
    assert got.host_pids is False and got.device_holders == (holder,)
    assert user_totals(got) == user_totals(sent)


def test_a_user_whose_processes_all_read_na_has_no_total_not_zero():
    xorg = GpuProcess(
        pid=2514, used=None, kinds=("graphics",), info=ProcessInfo(pid=2514, user="root", name="Xorg")
    )
    train = GpuProcess(pid=4242, used=3 * GiB, info=ProcessInfo(pid=4242, user="alice"))
    frame = Frame(time=1.0, gpus=(GpuSample(index=0, total=24 * GiB, used=4 * GiB, processes=(train, xorg)),))
    totals = {t.label: t for t in user_totals(frame)}
    assert totals["alice"].used == 3 * GiB
    assert totals["root"].used is None and totals["root"].unreported == 1
    (root_line,) = [line for line in render_table(frame).splitlines() if line.strip().startswith("root ")]
    assert root_line.split()[1] == "n/a" and "0 B" not in root_line
    assert {"user": "root", "used": None, "gpus": [], "processes": 1, "unreported": 1} in frame_to_dict(
        frame
    )["users"]
