"""What the agent answers a monitor, and what it leaves at exit (agent thread).

Requests (agent/protocol/names.py ``Op``) read, with one exception: RECORD_SITES
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

from vramscope.agent import protocol

from vramscope.agent.serving import paths
from vramscope.agent.protocol import Op

AGENT_VERSION = 1
PULL_MAX_BYTES = 1024 * 1024


class Answers:
    """The replies to a monitor's requests (agent thread). Uses: the ``ring``, the agent's
    ``identity``, ``serving`` (the interval, the server's counters), ``counters`` (() ->
    the agent's own: samples, errors, last_error, steps, walks), the site recorder
    ``sites`` and the allocator watch ``allocator``."""

    def __init__(self, ring, identity: dict, serving, counters, sites, allocator):
        self._ring = ring
        self._identity = identity
        self._serving = serving
        self._counters = counters
        self._sites = sites
        self._allocator = allocator

    def answer(self, request: dict) -> bytes:
        """The reply to one monitor request; read-only ops only, but RECORD_SITES."""
        op = request.get("op")
        ring = self._ring
        if op == Op.HELLO:
            reply = {
                "ok": True,
                "op": Op.HELLO,
                "protocol": protocol.PROTOCOL_VERSION,
                "supported": sorted(protocol.SUPPORTED_VERSIONS),
                "agent_version": AGENT_VERSION,
                "interval": self._serving.interval,
                "oldest": ring.oldest(),
                "latest": ring.seq,
            }
            reply.update(self._identity)
            return protocol.encode_payload(reply)
        if op == Op.PULL:
            cursor = request.get("cursor", 0)
            max_bytes = request.get("max_bytes", PULL_MAX_BYTES)
            if not isinstance(cursor, int) or isinstance(cursor, bool) or cursor < 0:
                return protocol.encode_payload({"ok": False, "error": "cursor must be an integer >= 0"})
            if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
                max_bytes = PULL_MAX_BYTES
            max_bytes = max(1024, min(max_bytes, protocol.MAX_FRAME - 4096))
            items, new_cursor, dropped, more = ring.pull(cursor, max_bytes)
            head = protocol.encode_payload(
                {"ok": True, "op": Op.PULL, "cursor": new_cursor, "dropped": dropped, "more": more}
            )
            return head[:-1] + b',"items":[' + b",".join(items) + b"]}"
        if op == Op.STATUS:
            counters = self._counters()
            server = self._serving.server
            return protocol.encode_payload(
                {
                    "ok": True,
                    "op": Op.STATUS,
                    "samples": counters["samples"],
                    "errors": counters["errors"],
                    "last_error": counters["last_error"],
                    "ring_items": len(ring),
                    "ring_bytes": ring.nbytes,
                    "seq": ring.seq,
                    "server": dict(server.counters) if server is not None else {},
                    "steps": counters["steps"],
                    "walks": counters["walks"],
                }
            )
        if op == Op.RECORD_SITES:  # history on for N steps, then off (agent/allocator/site_recorder.py)
            reply = self._sites.request(request.get("steps"), request.get("max_entries"))
            return protocol.encode_payload(dict(reply, op=Op.RECORD_SITES))
        if op == Op.ALLOCATOR:  # a snapshot's summary now (it also goes into the ring)
            return protocol.encode_payload({"ok": True, "op": Op.ALLOCATOR, "item": self._allocator.take()})
        return protocol.encode_payload(
            {
                "ok": False,
                "error": f"unknown request {op!r} "
                f"(it answers {', '.join(Op)}; all read-only but "
                f"{Op.RECORD_SITES})",
            }
        )


def write_final(socket_path: str | None, identity: dict, interval: float, ring) -> str | None:
    """At exit: the whole ``ring`` to <runtime dir>/agent-<pid>-<ticks>.final.json (0600),
    beside the socket at ``socket_path`` (None: no socket, no dump)."""
    if socket_path is None:
        return None
    directory = os.path.dirname(socket_path)
    ticks = identity.get("start_ticks") or 0
    path = os.path.join(directory, paths.final_name(os.getpid(), ticks))
    tmp = path + ".tmp"
    hello = dict(
        identity,
        protocol=protocol.PROTOCOL_VERSION,
        agent_version=AGENT_VERSION,
        interval=interval,
    )
    head = b'{"hello":' + json.dumps(hello).encode() + b',"items":['
    items = ring.all_items()
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
