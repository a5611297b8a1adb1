"""`--host` end to end: a stand-in ssh on PATH runs `vramscope stream` on this
machine against a fake NVML state per "host", as a user's ssh would remotely."""

from __future__ import annotations

import pytest
import json
import os
import signal
import subprocess
import sys
import time

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.sources.remote.hosts import HOST_BLOCK, HostActions, HostsSource
from vramscope.sources.remote.host_stream import CONNECTED, DOWN, RemoteHost


def box(*gpus_used_gib, pids=()) -> FakeState:
    gpus = [FakeGpu(name="NVIDIA RTX A6000", total=48 * GiB, used=int(u * GiB)) for u in gpus_used_gib]
    for pid in pids:
        gpus[0].processes.append(FakeProcess(pid, 3 * GiB, sm=0))
    return FakeState(gpus=gpus)


def vramscope(*args, timeout=90, env=None):
    return subprocess.run(
        [sys.executable, "-m", "vramscope", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.mark.slow
def test_status_json_lists_each_host_with_its_gpus_or_its_error(hosts, sleepers):
    pid = sleepers(1)[0]
    hosts.add("lab", box(10, 20, pids=[pid]))
    hosts.add("cloud", box(40))
    r = vramscope("status", "--json", "--host", "lab", "--host", "alice@cloud", "--host", "nowhere")
    assert r.returncode == 1, r.stderr  # one host did not answer
    doc = json.loads(r.stdout)
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert list(by_host) == ["lab", "alice@cloud", "nowhere"]
    lab = by_host["lab"]
    assert lab["state"] == "connected" and lab["error"] is None
    assert [g["memory"]["used"] for g in lab["gpus"]] == [10 * GiB, 20 * GiB]
    assert [p["pid"] for p in lab["gpus"][0]["processes"]] == [pid]
    assert lab["gpus"][0]["processes"][0]["start_time"] is not None
    assert [g["memory"]["used"] for g in by_host["alice@cloud"]["gpus"]] == [40 * GiB]
    assert by_host["nowhere"]["gpus"] == []
    assert "Could not resolve hostname nowhere" in by_host["nowhere"]["error"]
    # the user's own ssh, in batch mode (no password prompt can hang a window)
    assert ["lab", "vramscope stream --interval 1"] in hosts.calls()


@pytest.mark.slow
def test_status_text_names_each_host_above_its_gpus(hosts, sleepers):
    pid = sleepers(1)[0]
    hosts.add("lab", box(10, 20, pids=[pid]))
    hosts.add("cloud", box(40))
    r = vramscope("status", "--host", "lab", "--host", "cloud", "--host", "nowhere")
    assert r.returncode == 1, r.stderr
    out = r.stdout
    heads = [line for line in out.splitlines() if line.startswith("== ")]
    assert heads == ["== lab ==", "== cloud ==", "== nowhere =="]
    lab, cloud, nowhere = out.split("== cloud ==")[0], *out.split("== cloud ==")[1].split("== nowhere ==")
    assert str(pid) in lab and str(pid) not in cloud  # each host's processes under it
    assert "RTX A6000" in lab and "RTX A6000" in cloud
    assert "Could not resolve hostname nowhere" in nowhere


def test_a_host_without_vramscope_gets_the_install_command(hosts):
    hosts.add("bare", path="/usr/bin:/bin")  # neither the command nor the module there
    r = vramscope("status", "--host", "bare")
    assert r.returncode == 2
    lines = [line for line in r.stdout.splitlines() if "bare" in line and "install" in line]
    assert lines == [
        "vramscope is not installed on bare; install it with: "
        "ssh bare python3 -m pip install --user vramscope"
    ]
    tried = [c[1].split(" --")[0] for c in hosts.calls() if c[0] == "bare"]
    assert tried[:2] == ["vramscope stream", "python3 -m vramscope stream"]


def test_the_module_is_used_where_the_command_is_not_on_the_path(hosts):
    hosts.add_module_only("modonly", box(5))
    r = vramscope("status", "--json", "--host", "modonly")
    assert r.returncode == 0, r.stdout + r.stderr
    (host,) = json.loads(r.stdout)["hosts"]
    assert [g["memory"]["used"] for g in host["gpus"]] == [5 * GiB]


def wait_for(predicate, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_two_hosts_side_by_side_and_a_dropped_one_comes_back(hosts):
    hosts.add("a", box(1, 2))
    hosts.add("b", box(7))
    source = HostsSource(["a", "b"], interval=0.2, backoff=(0.2, 1.0))
    try:
        frame = wait_for(
            lambda: (f := source.sample(time.time())) and len(f.gpus) == 3 and f, what="both hosts"
        )
        assert [(g.index, g.host, g.host_index, g.label) for g in frame.gpus] == [
            (0, "a", 0, "a GPU 0"),
            (1, "a", 1, "a GPU 1"),
            (HOST_BLOCK, "b", 0, "b GPU 0"),
        ]
        assert frame.source == "ssh" and frame.error is None
        # host a drops: killed mid-stream, and unreachable for a while
        a = source.hosts[0]
        hosts.remove("a")
        os.killpg(a._proc.pid, signal.SIGKILL)
        frame = wait_for(
            lambda: (f := source.sample(time.time())) and f.gpus[0].error and f, what="a marked down"
        )
        states = {s.host: s.state for s in frame.hosts}
        assert states == {"a": DOWN, "b": CONNECTED}
        assert "connection lost" in frame.gpus[0].error and frame.gpus[0].used is None
        assert frame.gpus[2].error is None and frame.gpus[2].used == 7 * GiB  # b goes on
        connections = a.connections
        wait_for(lambda: a.connections >= connections + 2, what="retries")  # backoff, not given up
        hosts.add("a", box(3, 4))
        frame = wait_for(
            lambda: (f := source.sample(time.time())) and f.gpus[0].used == 3 * GiB and f, what="a back"
        )
        assert [g.index for g in frame.gpus] == [0, 1, HOST_BLOCK]  # same numbers as before
    finally:
        source.close()


def test_each_pass_takes_the_hosts_frame_as_it_comes_not_an_interval_old(hosts):
    """The pipeline's own sampler thread over a host streaming every 1.5 s: every
    pass shows the frame the host has just sent. A pass on a grid of its own fell
    just before each frame arrived (both grids start together) and showed the
    previous one, 1.5 s old; `record --host` stamped it with its own time."""
    from vramscope.core.flow.sampler import Sampler
    from vramscope.core.store.store import Store

    hosts.add("gpubox", box(2))
    source = HostsSource(["gpubox"], interval=1.5)
    lags: list[float] = []

    def lag(frame):  # (an enricher: run in each pass, right after the source's sample)
        shown = source.hosts[0].snapshot(take=False).frame
        if frame.gpus and shown is not None:
            lags.append(frame.time - shown.time)
        return frame

    sampler = Sampler(source, Store(), interval=1.5, enrichers=[lag])
    sampler.start()
    try:
        wait_for(lambda: len(lags) >= 6, timeout=60, what="six passes with the host's GPUs")
    finally:
        sampler.stop()
        source.close()
    assert max(lags[1:]) < 0.75, lags  # (the first pass may take a frame that waited)


def test_a_new_interval_reaches_the_hosts_streams(hosts):
    """The window's settings change the interval of a --host window's sampler: each
    host's stream takes it, so the passes, which wait for the hosts' frames, follow."""
    hosts.add("gpubox", box(2))
    source = HostsSource(["gpubox"], interval=0.5)
    try:
        arrivals = source.hosts[0].arrivals
        wait_for(lambda: arrivals.count >= 2, what="the host's frames")
        start = arrivals.count
        time.sleep(3)
        fast = arrivals.count - start
        source.set_interval(2.0)
        time.sleep(1.5)  # (the request, and the frame the old interval had due)
        start = arrivals.count
        time.sleep(4.5)
        slow = arrivals.count - start
    finally:
        source.close()
    assert fast >= 5 and slow <= 3, (fast, slow)


def test_ending_a_remote_process_goes_over_the_channel_with_the_same_checks(hosts):
    victim = subprocess.Popen(["sleep", "300"])
    try:
        hosts.add("gpubox", box(12, pids=[victim.pid]))
        source = HostsSource(["gpubox"], interval=0.2)
        try:
            frame = wait_for(lambda: (f := source.sample(time.time())) and f.gpus and f, what="the host")
            proc = frame.gpus[0].processes[0]
            start = proc.identity[1]
            read_only = HostActions(source, read_only=True, audit_path=hosts.dir / "ro.jsonl")
            refused = read_only.terminate(victim.pid, start)
            assert not refused.ok and "read-only" in refused.message
            assert victim.poll() is None
            actions = HostActions(source, audit_path=hosts.dir / "audit.jsonl")
            summary = actions.describe(victim.pid, start, memory=proc.used)
            assert summary.own and summary.refusal is None and "sleep 300" in summary.command
            wrong = actions.terminate(victim.pid, start + 100.0)  # not the process shown
            assert not wrong.ok and "PID was reused" in wrong.message and victim.poll() is None
            early = actions.kill(victim.pid, start)
            assert not early.ok and "only after SIGTERM" in early.message
            done = actions.terminate(victim.pid, start)
            assert done.ok and done.message.startswith("gpubox: sent SIGTERM")
            assert victim.wait(10) == -signal.SIGTERM
            logged = [json.loads(x) for x in (hosts.dir / "audit.jsonl").read_text().splitlines()]
            assert [e["outcome"] for e in logged][-1] == "sent"
        finally:
            source.close()
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.slow
def test_record_keeps_the_host_in_the_session(hosts, tmp_path):
    hosts.add("trainbox", box(9))
    out = tmp_path / "remote.vramscope"
    r = vramscope("record", "--host", "trainbox", "--interval", "0.2", "--duration", "4", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    from vramscope.core.session import open_session

    reader = open_session(out)
    try:
        assert reader.meta["host"] == "trainbox" and reader.meta["source"] == "ssh"
        assert len(reader) >= 5
        latest = reader.latest_frame()
        assert latest.gpus[0].used == 9 * GiB
        assert latest.gpus[0].label == "trainbox GPU 0"  # reopened, it still says where
    finally:
        reader.close()
    trace = tmp_path / "remote.json"
    r = vramscope("export", str(out), "--format", "perfetto", "--out", str(trace))
    assert r.returncode == 0, r.stdout + r.stderr
    names = {
        e["args"]["name"]
        for e in json.loads(trace.read_text())["traceEvents"]
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    assert any(n.startswith("trainbox GPU 0") for n in names), names


@pytest.mark.slow
def test_a_peer_that_goes_silent_is_dropped_and_retried(hosts, tmp_path):
    """A remote that stops writing (a hung machine, a stalled network) is
    noticed by the silence, not waited for forever."""
    slow = tmp_path / "slowbin"
    slow.mkdir()
    script = slow / "vramscope"
    hello = '{"type":"hello","stream":"vramscope","version":1,"vramscope":"x","host":"h","interval":1}'
    script.write_text(f"#!/bin/sh\necho '{hello}'\nexec sleep 300\n")
    script.chmod(0o755)
    hosts.add("hung", path=f"{slow}:/usr/bin:/bin")
    host = RemoteHost("hung", interval=0.1, stale_after=1.0, backoff=(0.2, 0.5)).start()
    try:
        wait_for(lambda: host.snapshot().state == CONNECTED, what="hello")
        view = wait_for(lambda: (v := host.snapshot()).state == DOWN and v, what="silence noticed")
        assert "no data for 1 s" in view.error
    finally:
        host.close()


BURST_STREAM = """#!{python}
import json, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
send({{"type": "hello", "stream": "vramscope", "version": 1, "vramscope": "9.9", "host": "burst", "interval": 1}})
for k in range(3):  # three frames at once, each with the agent's samples since the one before
    frame = {frame}
    frame["time"] += k
    frame["agents"][0]["time"] = frame["time"]
    frame["agents"][0]["samples"] = [{{"time": frame["time"] - 0.5 + 0.25 * i}} for i in range(3)]
    send({{"type": "frame", "frame": frame}})
sys.stdin.read()
"""


def test_frames_that_come_faster_than_the_passes_lose_no_agent_sample(hosts):
    """A host sends three frames between two passes: the pass's report carries the
    agent samples of all three (as it carries their events), not the last one's."""
    from vramscope.core.samples import AgentReport, Frame, GpuSample
    from vramscope.core.stream.codec import frame_to_wire

    good = Frame(
        time=1.7e9,
        source="nvml",
        gpus=(GpuSample(index=0, name="NVIDIA RTX A6000"),),
        agents=(AgentReport(pid=4242, start_time=1.6e9),),
    )
    bindir = hosts.dir / "burst-bin"
    bindir.mkdir()
    script = bindir / "vramscope"
    script.write_text(BURST_STREAM.format(python=sys.executable, frame=repr(frame_to_wire(good))))
    script.chmod(0o755)
    hosts.add("burst", path=os.pathsep.join([str(bindir), "/usr/bin", "/bin"]))
    source = HostsSource(["burst"], interval=1.0)
    try:
        wait_for(lambda: source.hosts[0].arrivals.count >= 3, what="three frames")
        (report,) = source.sample(time.time()).agents
    finally:
        source.close()
    expected = [1.7e9 + k - 0.5 + 0.25 * i for k in range(3) for i in range(3)]
    assert [s.time for s in report.samples] == expected


def test_a_settings_request_to_a_host_stream_reaches_its_hosts():
    """`vramscope stream --host ...` (a --host window's sampler process) given a new
    interval: its passes and each host take it; a wrong one changes nothing."""
    from vramscope.core.stream.settings_request import settings_message, settings_reply
    from vramscope.sources.assembly import build_monitor

    source = HostsSource(["a", "b"], interval=1.0, start=False)
    monitor = build_monitor(source, enrichers=None, interval=1.0)
    try:
        reply = settings_reply(monitor, {**settings_message(interval=3.0), "id": 7})
        assert reply["ok"] and reply["id"] == 7
        assert monitor.pipeline.sampler.interval == 3.0
        assert source.interval == 3.0 and [h.interval for h in source.hosts] == [3.0, 3.0]
        refused = settings_reply(monitor, {"type": "settings", "interval": "fast", "id": 8})
        assert not refused["ok"] and source.interval == 3.0
    finally:
        monitor.close()
