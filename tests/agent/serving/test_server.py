"""The agent's socket under bad peers: it answers, refuses, closes -- and keeps serving."""

from __future__ import annotations

import os
import socket
import stat
import struct
import subprocess
import sys
import time

import psutil
import pytest

from vramscope.agent import protocol

from vramscope.agent.serving import paths


def connect(path, timeout=2.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def ask(sock, obj):
    sock.sendall(protocol.encode(obj))
    return read_one(sock)


def read_one(sock):
    reader = protocol.FrameReader()
    while True:
        data = sock.recv(1 << 20)
        if not data:
            raise ConnectionError("closed")
        msgs = reader.feed(data)
        if msgs:
            return msgs[0]


def closed_by_peer(sock, timeout=2.0) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


@pytest.fixture
def served(make_agent, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "8")
    agent = make_agent()
    agent.start()
    assert agent.wait_started(5)
    assert agent.server is not None, agent.server_error
    return agent


def test_directory_and_socket_are_private(served, runtime_dir):
    assert stat.S_IMODE(os.stat(runtime_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(served.socket_path).st_mode) == 0o600
    assert os.path.basename(served.socket_path).startswith(f"agent-{os.getpid()}-")


def test_hello_says_who_the_process_is(served):
    with connect(served.socket_path) as s:
        hello = ask(s, {"op": "hello"})
    assert hello["ok"] and hello["pid"] == os.getpid()
    assert abs(hello["start_time"] - psutil.Process().create_time()) < 0.05
    assert hello["hostname"] == socket.gethostname()
    assert (hello["rank"], hello["local_rank"], hello["world_size"]) == (3, 1, 8)
    assert hello["protocol"] == protocol.PROTOCOL_VERSION


def test_garbage_gets_an_error_reply_then_a_closed_connection_and_the_agent_serves_on(served):
    with connect(served.socket_path) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = read_one(s)
        assert reply["ok"] is False and "magic" in reply["error"]
        assert closed_by_peer(s)
    with connect(served.socket_path) as s:
        assert ask(s, {"op": "pull", "cursor": 0})["ok"]
    assert served.server.counters["bad_frames"] == 1
    assert served.serving.thread.is_alive()


def test_a_huge_length_prefix_is_refused_at_once(served):
    with connect(served.socket_path) as s:
        t0 = time.monotonic()
        s.sendall(struct.pack(">2sBBI", b"VS", 1, 0, 0xFFFFFFF0))
        reply = read_one(s)
        assert "exceeds" in reply["error"]
        assert closed_by_peer(s)
        assert time.monotonic() - t0 < 1.0


def test_valid_frame_with_unknown_request_or_bad_cursor_gets_an_error_and_the_connection_stays(served):
    with connect(served.socket_path) as s:
        assert "read-only" in ask(s, {"op": "kill", "pid": 1})["error"]
        assert ask(s, {"op": "pull", "cursor": "zero"})["ok"] is False
        assert ask(s, {"op": "hello"})["ok"] is True


def test_a_peer_of_another_uid_is_closed_without_a_word(served):
    served.server.peer_uid = lambda sock: os.getuid() + 1  # what SO_PEERCRED says for another user
    with connect(served.socket_path) as s:
        try:
            s.sendall(protocol.encode({"op": "hello"}))
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_by_peer(s)
    assert served.server.counters["rejected_uid"] == 1
    served.server.peer_uid = lambda sock: os.getuid()
    with connect(served.socket_path) as s:
        assert ask(s, {"op": "hello"})["ok"]
    served.server.peer_uid = lambda sock: 0  # root (a monitor reaching into containers)
    with connect(served.socket_path) as s:
        assert ask(s, {"op": "hello"})["ok"]
    assert served.server.counters["rejected_uid"] == 1


def test_a_half_sent_frame_stalls_nobody(served):
    stuck = connect(served.socket_path)
    frame = protocol.encode({"op": "hello"})
    stuck.sendall(frame[:5])  # and then silence
    try:
        t0 = time.monotonic()
        with connect(served.socket_path) as s:
            assert ask(s, {"op": "hello"})["ok"]
        assert time.monotonic() - t0 < 1.0
        n = served.samples
        time.sleep(0.3)
        assert served.samples > n  # sampling carries on
    finally:
        stuck.close()


def test_pull_pages_with_a_cursor_and_says_when_the_ring_dropped_items(make_agent):
    agent = make_agent(ring_caps={"sample": 20, "step": 10, "event": 10})
    for _ in range(50):
        agent.sample_once()
    agent.start()
    assert agent.wait_started(5)
    with connect(agent.socket_path) as s:
        first = ask(s, {"op": "pull", "cursor": 0, "max_bytes": 2000})
        assert first["dropped"] is True and first["more"] is True
        seqs = [it["seq"] for it in first["items"]]
        cursor = first["cursor"]
        while True:
            r = ask(s, {"op": "pull", "cursor": cursor, "max_bytes": 2000})
            seqs += [it["seq"] for it in r["items"]]
            assert r["dropped"] is False
            cursor = r["cursor"]
            if not r["more"]:
                break
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
    assert seqs[-1] >= 50 and len(seqs) >= 20


def test_stale_sockets_of_dead_processes_are_removed(runtime_dir):
    code = "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); print('bound')"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    stale = os.path.join(runtime_dir, paths.socket_name(int(dead), 12345))
    subprocess.run([sys.executable, "-c", code, stale], check=True, capture_output=True)
    assert os.path.exists(stale)
    keep = os.path.join(runtime_dir, "notes.txt")
    open(keep, "w").close()
    removed = paths.remove_stale(runtime_dir)
    assert removed == [stale] and not os.path.exists(stale) and os.path.exists(keep)


def test_a_runtime_dir_owned_by_someone_else_or_a_symlink_is_refused(tmp_path):
    target = tmp_path / "real"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(paths.RuntimeDirError, match="symlink"):
        paths.secure_dir(str(link))
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    os.chmod(loose, 0o777)
    paths.secure_dir(str(loose))
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to hand a directory to another uid")
def test_a_runtime_dir_owned_by_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(paths.RuntimeDirError, match="belongs to uid 65534"):
        paths.secure_dir(str(theirs))


def test_a_request_in_another_protocol_version_is_answered_in_that_version(served):
    payload = b'{"op":"hello","protocol":9}'
    with connect(served.socket_path) as s:
        s.sendall(struct.pack(">2sBBI", b"VS", 9, 0, len(payload)) + payload)
        data = b""
        while len(data) < protocol.HEADER_SIZE:
            data += s.recv(65536)
        magic, version, _flags, length = protocol.HEADER.unpack(data[: protocol.HEADER_SIZE])
        while len(data) < protocol.HEADER_SIZE + length:
            data += s.recv(65536)
    assert (magic, version) == (b"VS", 9)  # the client can read the header of its own version
    reply = protocol.decode_payload(data[protocol.HEADER_SIZE :])
    assert reply["ok"] is False and reply["supported"] == [protocol.PROTOCOL_VERSION]
    assert "version 9 not supported" in reply["error"]
    with connect(served.socket_path) as s:  # and the agent goes on serving
        assert ask(s, {"op": "hello"})["ok"]
