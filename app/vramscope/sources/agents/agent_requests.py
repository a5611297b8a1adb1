"""Asking one local agent to do something now (``vramscope sites``, the agents tab's
button): find its socket by PID, send the request, follow its events.

The socket is found where the agent listens (agent/serving/paths.py: the same
candidate directories, the name from the PID and its start time in
``/proc``), connected to through sources/agents/agent_connection.py (a socket only,
served by its directory's owner) -- never on the GUI thread.
"""

from __future__ import annotations

import os
import time

from vramscope.agent.serving import paths
from vramscope.agent.protocol import EventKind, Op
from vramscope.sources.agents.agent_connection import AgentConnection
from vramscope.sources.agents.agent_input import integer
from vramscope.sources.agents.sites_reply import refusal, sites_data

REPLY_WAIT = 5.0  # seconds for one reply


class NoAgent(LookupError):
    """No agent socket for that process here; the message says why (one line)."""


def socket_of(pid: int, dirs: list[str] | None = None) -> str:
    ticks = paths.start_ticks(pid)
    if ticks is None:
        raise NoAgent(f"no process {pid} on this machine")
    name = paths.socket_name(pid, ticks)
    for d in dirs or paths.candidate_dirs():
        path = os.path.join(d, name)
        if os.path.lexists(path):
            return path
    raise NoAgent(
        f"process {pid} runs no vramscope agent (start it with `vramscope run -- python ...` "
        "or agent.start() in the script)"
    )


def connect(pid: int, dirs: list[str] | None = None) -> AgentConnection:
    path = socket_of(pid, dirs)
    return AgentConnection(path, owner=os.getuid())


def start_sites(pid: int, steps: int, dirs: list[str] | None = None, clock=time.monotonic) -> dict:
    """Only start a recording (the agents tab follows it in the events it pulls anyway):
    the agent's reply, or {"ok": False, "error"}."""
    try:
        conn = connect(pid, dirs)
    except (NoAgent, OSError) as exc:
        return {"ok": False, "error": str(exc)}
    try:
        return conn.request({"op": Op.RECORD_SITES, "steps": steps}, clock() + REPLY_WAIT)
    except (OSError, ValueError) as exc:
        return {"ok": False, "error": str(exc)}
    finally:
        conn.close()


def record_sites(
    pid: int,
    steps: int,
    dirs: list[str] | None = None,
    timeout: float = 600.0,
    on_progress=None,
    clock=time.monotonic,
) -> dict:
    """Start a recording of allocation sites for ``steps`` steps and follow it to the end:
    the final SITES event's data, checked (sources/agents/sites_reply.py: "state" "done" or
    "failed", "ok"), or {"ok": False, "error"}. A reply that breaks the framing or the
    limits raises ConnectionError (sources/agents/agent_connection.py)."""
    conn = connect(pid, dirs)
    try:
        hello = conn.request({"op": Op.HELLO}, clock() + REPLY_WAIT)
        cursor = integer(hello.get("latest")) or 0
        reply = conn.request({"op": Op.RECORD_SITES, "steps": steps}, clock() + REPLY_WAIT)
        if reply.get("ok") is not True:
            return {"ok": False, "error": refusal(reply)}
        end = clock() + timeout
        while clock() < end:
            got = conn.request({"op": Op.PULL, "cursor": cursor}, clock() + REPLY_WAIT)
            cursor = integer(got.get("cursor")) or cursor
            items = got.get("items")
            for item in items if isinstance(items, list) else ():
                if not isinstance(item, dict):
                    continue
                if item.get("kind") != "event" or item.get("event") != EventKind.SITES:
                    continue
                data = sites_data(item.get("data"))
                if data["state"] in ("done", "failed"):
                    return dict(data, ok=data["state"] == "done")
                if on_progress is not None:
                    on_progress(data)
            time.sleep(0.25)
        return {
            "ok": False,
            "error": f"no result within {timeout:.0f} s (the run may have stopped "
            "stepping); the recording ends by itself after its steps",
        }
    finally:
        conn.close()
