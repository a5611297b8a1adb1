"""What the agent answers a monitor, and what it leaves at exit (agent thread).

Requests (agent/protocol.py ``Op``) read, with one exception: RECORD_SITES
turns PyTorch's memory history on for N steps and off again -- it changes no
tensor and no result, only what the allocator records (issue 25); a request
for it is bounded (steps, max_entries) and refused with its reason where it
cannot run. The others: HELLO (identity and the
protocol versions it speaks), PULL (items after a cursor, from the bounded
ring) and STATUS (its own counters). At exit the whole ring is written to a
0600 file beside the socket, so a monitor started later still sees the run.
"""

from __future__ import annotations

import json
import os

from vramscope.agent import paths, protocol
from vramscope.agent.protocol import Op

AGENT_VERSION = 1
PULL_MAX_BYTES = 1024 * 1024


def answer(agent, request: dict) -> bytes:
    """The reply to one monitor request (agent thread); read-only ops only."""
    op = request.get("op")
    if op == Op.HELLO:
        reply = {
            "ok": True,
            "op": Op.HELLO,
            "protocol": protocol.PROTOCOL_VERSION,
            "supported": sorted(protocol.SUPPORTED_VERSIONS),
            "agent_version": AGENT_VERSION,
            "interval": agent.interval,
            "oldest": agent.ring.oldest(),
            "latest": agent.ring.seq,
        }
        reply.update(agent.identity)
        return protocol.encode_payload(reply)
    if op == Op.PULL:
        cursor = request.get("cursor", 0)
        max_bytes = request.get("max_bytes", PULL_MAX_BYTES)
        if not isinstance(cursor, int) or isinstance(cursor, bool) or cursor < 0:
            return protocol.encode_payload({"ok": False, "error": "cursor must be an integer >= 0"})
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
            max_bytes = PULL_MAX_BYTES
        max_bytes = max(1024, min(max_bytes, protocol.MAX_FRAME - 4096))
        items, new_cursor, dropped, more = agent.ring.pull(cursor, max_bytes)
        head = protocol.encode_payload(
            {"ok": True, "op": Op.PULL, "cursor": new_cursor, "dropped": dropped, "more": more}
        )
        return head[:-1] + b',"items":[' + b",".join(items) + b"]}"
    if op == Op.STATUS:
        counters = dict(agent.server.counters) if agent.server is not None else {}
        return protocol.encode_payload(
            {
                "ok": True,
                "op": Op.STATUS,
                "samples": agent.samples,
                "errors": agent.errors,
                "last_error": agent.last_error,
                "ring_items": len(agent.ring),
                "ring_bytes": agent.ring.nbytes,
                "seq": agent.ring.seq,
                "server": counters,
                "steps": agent.steps.count,
                "walks": agent.registry.walks,
            }
        )
    if op == Op.RECORD_SITES:  # history on for N steps, then off (agent/site_recorder.py)
        reply = agent.sites.request(request.get("steps"), request.get("max_entries"))
        return protocol.encode_payload(dict(reply, op=Op.RECORD_SITES))
    if op == Op.ALLOCATOR:  # a snapshot's summary now (it also goes into the ring)
        return protocol.encode_payload({"ok": True, "op": Op.ALLOCATOR, "item": agent.allocator.take()})
    return protocol.encode_payload(
        {
            "ok": False,
            "error": f"unknown request {op!r} "
            f"(it answers {', '.join(Op)}; all read-only but "
            f"{Op.RECORD_SITES})",
        }
    )


def write_final(agent) -> str | None:
    """At exit: the whole ring to <runtime dir>/agent-<pid>-<ticks>.final.json (0600)."""
    if agent.socket_path is None:
        return None
    directory = os.path.dirname(agent.socket_path)
    ticks = agent.identity.get("start_ticks") or 0
    path = os.path.join(directory, paths.final_name(os.getpid(), ticks))
    tmp = path + ".tmp"
    hello = dict(
        agent.identity,
        protocol=protocol.PROTOCOL_VERSION,
        agent_version=AGENT_VERSION,
        interval=agent.interval,
    )
    head = b'{"hello":' + json.dumps(hello).encode() + b',"items":['
    items = agent.ring.all_items()
    room, keep = paths.FINAL_MAX_BYTES - len(head) - 2, len(items)
    while keep and room - len(items[keep - 1]) - 1 >= 0:  # the newest that fit the monitor's limit
        keep -= 1
        room -= len(items[keep]) + 1
    body = head + b",".join(items[keep:]) + b"]}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    os.replace(tmp, path)
    return path
