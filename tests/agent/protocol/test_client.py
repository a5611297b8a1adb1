"""The monitor's client against real agent processes (CPU training loops)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from vramscope.sources.demo.allocator_replay import GiB, ReplayProvider, memory_stats_dict
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import Store
from vramscope.core.agent_figures.agent_keys import series_key as agent_key
from vramscope.sources.agents.agent_client import AgentClient

HERE = Path(__file__).resolve().parent.parent  # (tests/agent: the training scripts)
SCRIPT = HERE / "cpu_train.py"

pytestmark = pytest.mark.timeout(120)


def start_child(tmp_path, name, steps=40, pause=0.02, hidden=256, agent=True, wait=True):
    out = tmp_path / f"{name}.json"
    release = tmp_path / f"{name}.release"
    env = dict(os.environ)
    if wait:
        env["CPU_TRAIN_WAIT"] = str(release)
    cmd = [sys.executable, str(SCRIPT), str(out), str(steps), str(pause), str(hidden)]
    if agent:
        cmd.append("--agent")
    proc = subprocess.Popen(cmd, env=env)
    return proc, out, release


def wait_for(predicate, timeout=30.0, every=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("condition not met in time")


def report_for(client, pid, frame=None):
    frame = client(frame or Frame(time=time.time()))
    for r in frame.agents:
        if r.pid == pid:
            return r
    return None


def finished(out, steps):
    try:
        return json.loads(out.read_text())["steps_done"] == steps
    except (OSError, ValueError):
        return False


def stop(proc, release):
    release.touch()
    try:
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_a_training_subprocess_is_read_by_the_monitor_client(tmp_path, runtime_dir):
    proc, out, release = start_child(tmp_path, "one")
    try:
        store = Store()
        client = AgentClient(store=store)
        wait_for(lambda: finished(out, 40))
        real = json.loads(out.read_text())

        def settled():
            r = report_for(client, proc.pid)
            return r if r is not None and r.step == 40 else None

        report = wait_for(settled, timeout=10)
        assert report.connected and report.hostname and report.rank is None
        assert abs(report.start_time - psutil.Process(proc.pid).create_time()) < 0.05
        cpu = {d.device: d for d in report.devices}["cpu"]
        assert cpu.buckets.weights == real["weights"]
        assert cpu.buckets.gradients == real["gradients"]
        assert cpu.buckets.optimizer_state == real["optimizer_state"]
        assert cpu.allocated is None and cpu.buckets.other_allocated is None  # no allocator on CPU: unknown
        _, steps = store.series(agent_key(proc.pid, report.start_time, "steps", "step"))
        assert sorted(steps.astype(int).tolist()) == list(range(1, 41))
        _, weights = store.series(agent_key(proc.pid, report.start_time, "cpu", "weights"))
        assert weights[-1] == real["weights"]
    finally:
        stop(proc, release)
    assert proc.returncode == 0
    # after the end: the report says so and nothing is matched to it any more
    r = wait_for(
        lambda: (lambda x: x if x is not None and not x.connected else None)(report_for(client, proc.pid))
    )
    assert r.error == "process ended"


@pytest.mark.slow
def test_restarting_the_client_loses_nothing_the_ring_still_holds(tmp_path, runtime_dir):
    proc, out, release = start_child(tmp_path, "restart", steps=30, pause=0.03)
    try:
        first = Store()
        a = AgentClient(store=first)
        wait_for(lambda: report_for(a, proc.pid))
        a.close()  # the window is closed mid-run ...
        wait_for(lambda: finished(out, 30))
        time.sleep(0.3)
        second = Store()
        b = AgentClient(store=second)  # ... and started again
        r = wait_for(
            lambda: (lambda x: x if x is not None and x.step == 30 else None)(report_for(b, proc.pid))
        )
        key = agent_key(proc.pid, r.start_time, "cpu", "weights")
        t_first, _ = first.series(key)
        t_second, _ = second.series(key)
        assert len(t_first) and set(t_first.tolist()) <= set(t_second.tolist())
        _, steps = second.series(agent_key(proc.pid, r.start_time, "steps", "step"))
        assert sorted(steps.astype(int).tolist()) == list(range(1, 31))
        assert r.dropped is False
    finally:
        stop(proc, release)


@pytest.mark.slow
def test_a_finished_run_is_read_from_its_final_dump(tmp_path, runtime_dir):
    proc, out, release = start_child(tmp_path, "final", steps=10, pause=0.0, wait=False)
    assert proc.wait(60) == 0
    assert not any(n.endswith(".sock") for n in os.listdir(runtime_dir))
    client = AgentClient(store=Store())  # the monitor starts after the run
    r = report_for(client, proc.pid)
    real = json.loads(out.read_text())
    assert r is not None and r.step == 10 and not r.connected
    assert {d.device: d for d in r.devices}["cpu"].buckets.optimizer_state == real["optimizer_state"]


CLIENT_THAT_DIES = r"""
import socket, sys, time
from vramscope.agent import protocol
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(protocol.encode({"op": "pull", "cursor": 0, "max_bytes": 4000000}))
s.recv(10)  # read a little of the reply, then hang until killed
print("reading", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_the_monitor_killed_mid_read_changes_nothing_for_the_training(tmp_path, runtime_dir):
    proc, out, release = start_child(tmp_path, "kill", steps=60, pause=0.02)
    try:
        client = AgentClient()
        wait_for(lambda: report_for(client, proc.pid))
        sock = [os.path.join(runtime_dir, n) for n in os.listdir(runtime_dir) if n.endswith(".sock")][0]
        for _ in range(3):
            victim = subprocess.Popen([sys.executable, "-c", CLIENT_THAT_DIES, sock], stdout=subprocess.PIPE)
            assert victim.stdout.readline().strip() == b"reading"
            victim.send_signal(signal.SIGKILL)
            victim.wait()
        wait_for(lambda: finished(out, 60))
        r = wait_for(
            lambda: (lambda x: x if x is not None and x.step == 60 else None)(report_for(client, proc.pid))
        )
        assert r.connected and r.error is None
    finally:
        stop(proc, release)
    assert proc.returncode == 0


def _frame_with(procs_by_gpu, now=None):
    gpus = []
    for index, procs in procs_by_gpu.items():
        gpus.append(
            GpuSample(
                index=index,
                uuid=f"GPU-replay-{index:04d}",
                total=24 * GiB,
                used=sum(p.used or 0 for p in procs),
                processes=tuple(procs),
            )
        )
    return Frame(time=now or time.time(), gpus=tuple(gpus))


def _gpu_proc(pid, used, start_time="auto"):
    if start_time == "auto":
        start_time = psutil.Process(pid).create_time()
    return GpuProcess(pid=pid, used=used, info=ProcessInfo(pid=pid, start_time=start_time))


@pytest.mark.slow
def test_two_agents_and_a_plain_process_each_number_lands_on_its_own_process(tmp_path, runtime_dir):
    a, out_a, rel_a = start_child(tmp_path, "a", steps=5, pause=0.01, hidden=64)
    b, out_b, rel_b = start_child(tmp_path, "b", steps=5, pause=0.01, hidden=512)
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        client = AgentClient()
        wait_for(lambda: finished(out_a, 5) and finished(out_b, 5))
        real = {a.pid: json.loads(out_a.read_text()), b.pid: json.loads(out_b.read_text())}
        frame = _frame_with(
            {
                0: [_gpu_proc(plain.pid, 3 * GiB), _gpu_proc(a.pid, 2 * GiB), _gpu_proc(b.pid, 5 * GiB)],
                # a reused PID: same number as agent a, another start time -> not agent a
                1: [_gpu_proc(a.pid, GiB, start_time=psutil.Process(a.pid).create_time() - 1000.0)],
            }
        )
        enriched = wait_for(
            lambda: (lambda f: f if len(f.agents) == 2 and all(r.step == 5 for r in f.agents) else None)(
                client(frame)
            )
        )
        flags = {(g.index, p.pid): p.has_agent for g, p in enriched.all_processes()}
        assert flags == {(0, plain.pid): False, (0, a.pid): True, (0, b.pid): True, (1, a.pid): False}
        for r in enriched.agents:
            cpu = {d.device: d for d in r.devices}["cpu"]
            assert cpu.buckets.weights == real[r.pid]["weights"]
        assert real[a.pid]["weights"] != real[b.pid]["weights"]
        assert plain.pid not in {r.pid for r in enriched.agents}
    finally:
        plain.kill()
        plain.wait()
        stop(a, rel_a)
        stop(b, rel_b)


def test_outside_pytorch_is_the_process_memory_nvml_sees_minus_reserved(make_agent):
    import torch

    stats = memory_stats_dict(6 * GiB, 7 * GiB)
    agent = make_agent(ReplayProvider([{0: stats}], loop=True))
    agent.watch(model=torch.nn.Linear(8, 8))
    agent.start()
    assert agent.wait_started(5)
    store = Store()
    client = AgentClient(store=store)
    frame = _frame_with({0: [_gpu_proc(os.getpid(), 8 * GiB)]})
    enriched = wait_for(lambda: (lambda f: f if f.agents and f.agents[0].devices else None)(client(frame)))
    report = enriched.agents[0]
    cuda = {d.device: d for d in report.devices}["cuda:0"]
    assert cuda.allocated == 6 * GiB and cuda.reserved == 7 * GiB
    assert cuda.buckets.cached_free == GiB
    assert cuda.buckets.outside_pytorch == GiB  # 8 GiB NVML - 7 GiB reserved
    assert cuda.buckets.weights == 0  # the model lives on the CPU: nothing of it on cuda:0
    assert cuda.buckets.other_allocated == 6 * GiB
    assert next(p for _, p in enriched.all_processes()).has_agent
    t, v = store.series(agent_key(os.getpid(), report.start_time, "cuda:0", "outside_pytorch"))
    assert v[-1] == GiB


def test_an_agent_of_another_protocol_version_is_shown_with_the_mismatch(runtime_dir):
    """A newer agent answers in a version this monitor does not speak: the process is
    still reported, with the mismatch as its error, in the window's data and in status."""
    import socket
    import struct
    import threading

    from vramscope.agent.serving import paths
    from vramscope.core.status.status_report import frame_to_dict
    from vramscope.core.status.status_table import render_table

    ticks = paths.start_ticks() or 0
    path = os.path.join(runtime_dir, paths.socket_name(os.getpid(), ticks))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    stop_serving = threading.Event()

    def serve():  # a future agent: reads any frame, answers in its version 2
        listener.settimeout(0.2)
        while not stop_serving.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.recv(65536)
                body = b'{"ok":true,"op":"hello","protocol":2}'
                conn.sendall(struct.pack(">2sBBI", b"VS", 2, 0, len(body)) + body)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        client = AgentClient(dirs=[runtime_dir])
        frame = client(Frame(time=time.time()))
        [report] = frame.agents
        assert report.pid == os.getpid() and not report.connected
        assert "protocol version mismatch" in report.error and "speaks 2" in report.error
        doc = frame_to_dict(frame)
        assert "protocol version mismatch" in doc["agents"][0]["error"]
        assert "protocol version mismatch" in render_table(frame)
    finally:
        stop_serving.set()
        server.join(2)
        listener.close()
