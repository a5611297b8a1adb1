"""What one hostile or careless peer can cost the training process: bounded.

Each case is an attack that used to hurt (pipelined pulls never read, idle
connections holding every slot, a flood of requests) and what the agent
does now; a normal client is served throughout.
"""

from __future__ import annotations

import os
import socket
import time

import pytest

from vramscope.agent import protocol

from vramscope.agent.serving import server
from vramscope.core.samples import Frame
from vramscope.sources.agents.agent_client import AgentClient

from tests.agent.serving.test_server import ask, closed_by_peer, connect, read_one


@pytest.fixture
def served(make_agent):
    agent = make_agent()
    agent.start()
    assert agent.wait_started(5)
    assert agent.server is not None, agent.server_error
    return agent


def test_pipelined_pulls_never_read_are_refused_not_served(served):
    """400 pulls in one write: the agent used to answer them all into memory."""
    before = served.server.counters["requests"]
    with connect(served.socket_path) as s:
        s.sendall(protocol.encode({"op": "pull", "cursor": 0}) * 400)
        reply = read_one(s)
        assert reply["ok"] is False and "at most" in reply["error"]
        assert closed_by_peer(s)
    assert served.server.counters["requests"] == before  # none of them was handled
    assert served.server.counters["too_many_pipelined"] >= 1
    with connect(served.socket_path) as s:  # and everyone else is served on
        assert ask(s, {"op": "hello"})["ok"]


def test_a_peer_that_never_reads_is_closed_without_more_work(served, monkeypatch):
    """Replies pile up past the output cap: the connection closes, and the
    requests still queued behind it are not handled."""
    monkeypatch.setattr(server, "MAX_OUTBUF", 200)
    before = served.server.counters["requests"]
    with connect(served.socket_path) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(protocol.encode({"op": "status"}) * 8)
        assert closed_by_peer(s, timeout=3.0)
    handled = served.server.counters["requests"] - before
    assert 1 <= handled < 8
    assert served.server.counters["unread_replies"] == 1


@pytest.mark.slow
def test_idle_connections_do_not_lock_the_monitor_out(served, monkeypatch):
    """Every slot taken by silent peers: the monitor still gets in (the idlest
    makes room), and silent peers are dropped after a few seconds."""
    monkeypatch.setattr(server, "EVICT_IDLE_AFTER", 0.2)
    monkeypatch.setattr(server, "IDLE_TIMEOUT", 1.0)
    idle = []
    try:
        for _ in range(server.MAX_CONNECTIONS):
            idle.append(connect(served.socket_path))
            time.sleep(0.01)
        deadline = time.monotonic() + 3
        while served.server.connections < server.MAX_CONNECTIONS and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        with connect(served.socket_path) as s:
            assert ask(s, {"op": "hello"})["ok"]
        assert served.server.counters["evicted_idle"] >= 1
        assert served.server.counters["rejected_full"] == 0
        assert all(closed_by_peer(c, timeout=3.0) for c in idle[1:])
        assert served.server.counters["closed_idle"] >= 1
    finally:
        for c in idle:
            c.close()


def test_a_request_flood_is_rate_limited_per_connection(served):
    with connect(served.socket_path) as s:
        replies = []
        try:
            for _ in range(int(server.RATE_BURST) + 40):
                replies.append(ask(s, {"op": "status"}))
                if not replies[-1]["ok"]:
                    break
        except (ConnectionError, BrokenPipeError, ConnectionResetError):
            pass
        assert replies[-1]["ok"] is False and "per second" in replies[-1]["error"]
        assert len(replies) <= server.RATE_BURST + 10
        assert closed_by_peer(s)
    with connect(served.socket_path) as s:  # another connection has its own budget
        assert ask(s, {"op": "status"})["ok"]


@pytest.mark.slow
def test_the_monitor_pulls_again_after_its_idle_connection_was_dropped(served, monkeypatch):
    """At a long sampling interval the agent drops the monitor's connection in
    between; the next pass reconnects at once instead of failing."""
    monkeypatch.setattr(server, "IDLE_TIMEOUT", 0.3)
    client = AgentClient(dirs=[os.path.dirname(served.socket_path)])
    try:
        first = client(Frame(time=time.time()))
        assert [r.pid for r in first.agents] == [served.identity["pid"]]
        time.sleep(1.0)  # dropped meanwhile
        assert served.server.counters["closed_idle"] >= 1
        served.sample_once()
        second = client(Frame(time=time.time()))
        assert second.agents and second.agents[0].connected and second.agents[0].error is None
    finally:
        client.close()
