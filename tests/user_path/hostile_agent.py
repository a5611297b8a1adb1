"""An agent socket that answers as a broken or hostile agent would: a right
handshake, then items of every kind with wrong types, NaN and infinities,
nesting and strings where numbers belong -- new ones at every pull.

usage: hostile_agent.py READY_FILE   (in $VRAMSCOPE_RUNTIME_DIR; ends when READY_FILE is removed)
"""

import json
import os
import socket
import sys
import threading
import time

from vramscope.agent import protocol

from vramscope.agent.serving import paths

NAN, INF = float("nan"), float("inf")


def hostile_items(seq: int, t: float) -> list:
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["x"] = {}
        node = node["x"]
    return [
        {
            "seq": seq,
            "kind": "sample",
            "t": t,
            "step": "7",
            "devices": [
                {
                    "device": "cuda:0",
                    "allocated": NAN,
                    "reserved": "lots",
                    "buckets": {"weights": INF, "gradients": [1]},
                    "missing": [1, None],
                }
            ],
            "settings": {"expandable_segments": {"a": 1}},
            "models": [{"name": 5, "params": NAN}],
            "agent": {"errors": NAN},
        },
        {
            "seq": seq + 1,
            "kind": "sample",
            "t": t,
            "devices": [{"device": "cuda:0", "allocated": 10**30}],
            "models": "many",
            "input": {"batch": NAN},
            "sharded": {"fsdp_unsharded": {"cuda:0": "x"}},
        },
        {
            "seq": seq + 2,
            "kind": "step",
            "t": t,
            "step": seq,
            "duration": NAN,
            "devices": {"cuda:0": {"allocated_after": "x", "peak_allocated": NAN}},
            "phase_peaks": {"cuda:0": {"forward": [1]}},
        },
        {
            "seq": seq + 3,
            "kind": "event",
            "t": t,
            "event": "oom",
            "data": {"requested": NAN, "modules": "m", "deep": deep},
        },
        {"seq": seq + 4, "kind": "event", "t": t, "event": "step", "data": [1, 2]},
        {
            "seq": seq + 5,
            "kind": "modules",
            "t": t,
            "step": seq,
            "modules": [{"name": 7, "weights": "w"}, "row"],
        },
        {
            "seq": seq + 6,
            "kind": "allocator",
            "t": t,
            "devices": [{"device": "cuda:0", "reserved": NAN, "map": [{"size": "big"}]}],
        },
        {"seq": seq + 7, "kind": "sample", "t": NAN},
    ]


def encode(obj) -> bytes:
    payload = json.dumps(obj, allow_nan=True).encode()  # NaN as a hostile agent writes it
    return protocol.HEADER.pack(protocol.MAGIC, protocol.PROTOCOL_VERSION, 0, len(payload)) + payload


def serve(conn, me) -> None:
    reader, seq = protocol.FrameReader(), 1
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            for message in reader.feed(data):
                if message.get("op") == "hello":
                    reply = {
                        "ok": True,
                        "op": "hello",
                        "protocol": 1,
                        "supported": [1],
                        "agent_version": 1,
                        "interval": 0.1,
                        "oldest": 1,
                        "latest": seq,
                        **me,
                    }
                else:
                    items = hostile_items(seq, time.time())
                    seq += len(items)
                    reply = {
                        "ok": True,
                        "op": "pull",
                        "cursor": seq,
                        "dropped": False,
                        "more": False,
                        "items": items,
                    }
                conn.sendall(encode({**reply, "id": message.get("id")}))


def main() -> None:
    ready = sys.argv[1]
    directory = paths.secure_dir(os.environ["VRAMSCOPE_RUNTIME_DIR"])
    me = paths.identity()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(directory, paths.socket_name(me["pid"], me["start_ticks"])))
    listener.listen(8)
    listener.settimeout(0.2)
    open(ready, "w").close()
    while os.path.exists(ready):
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(conn, me), daemon=True).start()


main()
