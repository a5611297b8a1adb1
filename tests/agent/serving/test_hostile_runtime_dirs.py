"""The monitor reading agents' runtime directories that someone made hostile (or that
broke): FIFOs and links named like agents' files, sockets that accept and never
answer, huge or deeply nested dumps, handshakes of the wrong types. Each pass
ends within its budget, reads nothing unbounded, and prints no traceback."""

from __future__ import annotations

import json
import os
import resource
import socket
import threading
import time

import pytest

from vramscope.agent import protocol

from vramscope.agent.serving import paths
from vramscope.core.samples import Frame
from vramscope.sources.agents.agent_connection import AgentConnection, NotASocket
from vramscope.sources.agents.agent_state import ingest
from vramscope.sources.agents.agent_client import AgentClient

pytestmark = pytest.mark.timeout(60)

TICKS = 12345


def dump_path(directory, pid=4242) -> str:
    return os.path.join(directory, paths.final_name(pid, TICKS))


def sock_path(directory, pid) -> str:
    return os.path.join(directory, paths.socket_name(pid, TICKS))


def timed_poll(client, budget=10.0) -> tuple[Frame, float]:
    """One pass, on a thread (a hang fails the test instead of stalling the suite)."""
    out = {}

    def run():
        started = time.monotonic()
        out["frame"] = client(Frame(time=time.time()))
        out["took"] = time.monotonic() - started

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(budget)
    assert not t.is_alive(), "the pass hung"
    return out["frame"], out["took"]


class SilentSockets:
    """Sockets named like agents' that accept every connection and never answer."""

    def __init__(self, directory, n, first_pid=50000):
        self.listeners = []
        for i in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sock_path(directory, first_pid + i))
            s.listen(64)
            self.listeners.append(s)

    def close(self):
        for s in self.listeners:
            s.close()


class FakeAgent:
    """A socket that answers every request with the given payload (bytes) as one frame
    (``reply``: what a subclass answers to each request instead, framed or raw bytes)."""

    def __init__(self, path, payload: bytes):
        self.payload = payload
        self.got = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                reader = protocol.FrameReader()
                try:
                    while True:
                        data = conn.recv(65536)
                        if not data:
                            break
                        for message in reader.feed(data):
                            self.got.append(message)
                            conn.sendall(self.reply(message))
                except (OSError, protocol.ProtocolError):
                    pass

    def reply(self, message: dict) -> bytes:
        return protocol.frame_bytes(self.payload)

    def close(self):
        self.listener.close()


def test_a_fifo_named_like_a_final_dump_does_not_hang_the_pass(runtime_dir):
    os.mkfifo(dump_path(runtime_dir))
    frame, took = timed_poll(AgentClient())
    assert frame.agents == () and took < 2.0


def test_a_symlink_named_like_a_final_dump_is_not_followed(runtime_dir, tmp_path):
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps({"hello": {"pid": 4242, "start_ticks": TICKS}, "items": []}))
    os.symlink(real, dump_path(runtime_dir))
    frame, _ = timed_poll(AgentClient())
    assert frame.agents == ()


def test_a_huge_final_dump_is_not_read(runtime_dir):
    with open(dump_path(runtime_dir), "wb") as f:
        f.truncate(290 * 1024 * 1024)  # sparse: 290 MB on paper, nothing on disk
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    client = AgentClient()
    frame, took = timed_poll(client)
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert frame.agents == () and client.errors == 1
    assert grew_mb < 50 and took < 2.0


def test_a_deeply_nested_final_dump_is_damage_not_a_traceback(runtime_dir, capsys):
    with open(dump_path(runtime_dir), "w") as f:
        f.write('{"hello": ' + "[" * 200_000 + "]" * 200_000 + ', "items": []}')
    client = AgentClient()
    frame, _ = timed_poll(client)
    assert frame.agents == () and client.errors == 1
    assert "RecursionError" not in capsys.readouterr().err


def test_a_final_dump_with_a_handshake_of_the_wrong_types_is_refused(runtime_dir):
    with open(dump_path(runtime_dir), "w") as f:
        json.dump({"hello": {"pid": "4242", "hostname": ["x"]}, "items": "many"}, f)
    client = AgentClient()
    frame, _ = timed_poll(client)
    assert frame.agents == () and client.errors == 1


def test_fifty_silent_sockets_cost_one_pass_its_budget_and_the_real_agent_is_still_seen(
    runtime_dir, make_agent
):
    silent = SilentSockets(runtime_dir, 50)
    agent = make_agent()
    agent.start()
    assert agent.wait_started(5) and agent.server is not None
    client = AgentClient(timeout=1.0)
    try:
        frame, took = timed_poll(client)
        assert took < 1.0 + 0.5  # was 26 s: one timeout per silent socket
        assert [r.pid for r in frame.agents] == [os.getpid()]  # answered within the same pass
        frame, took = timed_poll(client)
        assert took < 0.5  # the silent ones wait for their turn instead of every pass
        assert frame.agents[0].connected and frame.agents[0].error is None
    finally:
        client.close()
        silent.close()


def test_a_symlink_named_like_a_socket_is_never_connected_to(runtime_dir, tmp_path):
    target = os.path.join(runtime_dir, "other-service")
    fake = FakeAgent(target, b'{"ok": true}')
    os.symlink(target, sock_path(runtime_dir, 4243))
    try:
        timed_poll(AgentClient())
        assert fake.got == []  # not a byte sent to the other service
    finally:
        fake.close()


def test_a_socket_served_by_someone_else_gets_nothing(runtime_dir):
    path = sock_path(runtime_dir, 4244)
    fake = FakeAgent(path, b'{"ok": true}')
    try:
        with pytest.raises(NotASocket, match="served by uid"):
            AgentConnection(path, owner=os.getuid() + 1)
        time.sleep(0.1)
        assert fake.got == []
    finally:
        fake.close()


@pytest.mark.parametrize(
    "payload",
    [
        b'{"ok": true, "pid": "1", "hostname": ["x"]}',  # fields of the wrong types
        b'{"ok": true, "pid": 100000000000000000000000000000}',  # no such pid
        b'{"ok": ' + b"[" * 5000 + b"]" * 5000 + b"}",  # nested past any use
        b'{"ok": false, "error": {"a": 1}, "supported": "1"}',  # a refusal of the wrong shape
    ],
)
def test_a_handshake_of_the_wrong_shape_is_an_error_not_a_traceback(runtime_dir, payload):
    fake = FakeAgent(sock_path(runtime_dir, 4245), payload)
    client = AgentClient()
    try:
        frame, took = timed_poll(client)
        assert frame.agents == () and client.errors == 1 and took < 2.0
    finally:
        client.close()
        fake.close()


def test_items_of_the_wrong_types_are_counted_and_the_agent_kept(runtime_dir, make_agent):
    agent = make_agent()
    agent.start()
    assert agent.wait_started(5)
    client = AgentClient()
    try:
        timed_poll(client)
        [state] = client._agents.values()
        ingest(
            state,
            [
                {"kind": "sample", "t": float("nan"), "devices": []},
                {"kind": "sample", "t": 1.0, "devices": "cuda:0"},
                {"kind": "sample", "t": 1.0, "devices": [{"device": ["cuda"]}]},
                {"kind": "step", "t": 1e400, "step": 3},
                {"kind": "step", "t": 1.0, "step": 3, "devices": {"cuda:0": 5}},
                {"kind": "event", "event": {"x": 1}, "t": 1.0},
            ],
            client.store,
        )
        assert state.bad_items == 6
        frame, _ = timed_poll(client)
        [report] = frame.agents
        assert report.connected and report.devices  # the good samples still shown
    finally:
        client.close()
