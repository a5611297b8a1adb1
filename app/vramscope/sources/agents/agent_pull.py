"""One agent's recent items, pulled once by PID (for `vramscope plan --pid`).

The window's client (sources/agents/agent_client.py) follows every agent continuously;
a one-shot command needs only the newest items of one process: find its
socket by the PID in the name (the agents' directories, sockets only, never
through a link), check the handshake names that PID, and pull the last
RECENT items. Every item is checked (sources/agents/agent_input.py) before use.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

from vramscope.agent import protocol

from vramscope.agent.serving import paths
from vramscope.agent.protocol import ItemKind, Op
from vramscope.sources.agents import agent_input
from vramscope.sources.agents.agent_connection import AgentConnection

RECENT = 400  # items: a few dozen samples, steps and per-module figures
PULL_TIMEOUT = 5.0


@dataclass
class Pulled:
    hello: agent_input.Hello
    samples: list = field(default_factory=list)  # checked sample items, oldest first
    steps: list = field(default_factory=list)  # checked step items
    modules: list = field(default_factory=list)  # raw "modules" items (checked where used)
    events: list = field(default_factory=list)  # (kind, time, data)


def find_socket(pid: int, dirs=None) -> str | None:
    for directory in dirs if dirs is not None else paths.candidate_dirs():
        try:
            paths.secure_dir(directory, create=False)
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            parsed = paths.parse_name(entry.name)
            if parsed is None or parsed[0] != pid or parsed[2] != paths.SOCKET_SUFFIX:
                continue
            try:
                if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    return entry.path
            except OSError:
                continue
    return None


def pull(pid: int, dirs=None, timeout: float = PULL_TIMEOUT) -> Pulled:
    """The agent of ``pid``'s newest items; ConnectionError with a sentence otherwise."""
    path = find_socket(pid, dirs)
    if path is None:
        raise ConnectionError(
            f"no vramscope agent found for pid {pid} (start the run under "
            "`vramscope run`, or call vramscope.agent.start() in it)"
        )
    deadline = time.monotonic() + timeout
    conn = AgentConnection(path, os.getuid())
    try:
        reply = conn.request(
            {
                "op": Op.HELLO,
                "protocol": protocol.PROTOCOL_VERSION,
                "supported": sorted(protocol.SUPPORTED_VERSIONS),
            },
            deadline,
        )
        try:
            hello = agent_input.hello(reply)
        except ValueError as exc:
            raise ConnectionError(f"the agent's handshake is unusable: {exc}") from None
        if hello.pid != pid:
            raise ConnectionError(f"the socket for pid {pid} is served by pid {hello.pid}")
        latest = agent_input.integer(reply.get("latest")) or 0
        cursor = max(agent_input.integer(reply.get("oldest")) or 0, latest - RECENT)
        out = Pulled(hello=hello)
        for _ in range(64):
            reply = conn.request({"op": Op.PULL, "cursor": cursor}, deadline)
            if reply.get("ok") is not True:
                raise ConnectionError(agent_input.text(reply.get("error")) or "pull refused")
            items = reply.get("items")
            _sort(out, items if isinstance(items, list) else [])
            new = agent_input.integer(reply.get("cursor"))
            if reply.get("more") is not True or new is None or new <= cursor:
                break
            cursor = new
        return out
    finally:
        conn.close()


def _sort(out: Pulled, items: list) -> None:
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        try:
            if kind == ItemKind.SAMPLE:
                out.samples.append(agent_input.sample(item))
            elif kind == ItemKind.STEP:
                out.steps.append(agent_input.step(item))
            elif kind == ItemKind.EVENT:
                out.events.append(agent_input.event(item))
            elif kind == ItemKind.MODULES:
                out.modules.append(item)
        except ValueError:
            continue
