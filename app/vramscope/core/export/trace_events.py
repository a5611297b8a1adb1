"""The trace's events beside its GPU and process counters (core/export/trace_export.py):
agent steps and OOMs as instant events on their process, alerts and end-process
actions as global ones, and each agent device's allocator figures
(core/agent_figures/device_fields.py) and buckets as counter tracks.
"""

from __future__ import annotations

from vramscope.agent.protocol import EventKind
from vramscope.core.agent_figures.device_fields import DEVICE_FIELDS
from vramscope.core.export.context import GPU_TRACE_PID
from vramscope.core.session.schema import BUCKET_COLUMNS

ALLOCATOR_ARGS = tuple(f.key for f in DEVICE_FIELDS)  # the session columns of the allocator track


def instant_events(ctx, reader, a, b, alerts, actions, us):
    red = ctx.redactor
    out = []
    for e in reader.recorded.events(a, b):
        rec = ctx.procs.get(e["proc"])
        pid = int(ctx.trace_pid_of[e["proc"]]) if rec is not None else 0
        data = red.data(e["data"])
        if e["kind"] == "step":
            name = f"step {data.get('step')}" if isinstance(data, dict) and "step" in data else "step"
            out.append(
                (
                    e["t"],
                    {"ph": "i", "s": "t", "cat": "step", "name": name, "pid": pid, "tid": 0, "args": data},
                )
            )
        else:
            name = "OOM" if e["kind"] == EventKind.OOM else e["kind"]
            out.append(
                (
                    e["t"],
                    {
                        "ph": "i",
                        "s": "p" if e["kind"] == EventKind.OOM else "t",
                        "cat": e["kind"],
                        "name": name,
                        "pid": pid,
                        "tid": 0,
                        "args": data,
                    },
                )
            )
    for al in alerts:
        if a <= al["t"] < b:
            pid = (
                int(ctx.trace_pid_of[al["proc"]])
                if al["proc"] in ctx.procs
                else GPU_TRACE_PID + al["gpu"]
                if al["gpu"] is not None
                else 0
            )
            out.append(
                (
                    al["t"],
                    {
                        "ph": "i",
                        "s": "g",
                        "cat": "alert",
                        "name": red.text(al["title"]) or al["kind"],
                        "pid": pid,
                        "tid": 0,
                        "args": {
                            "kind": al["kind"],
                            "severity": al["severity"],
                            "detail": red.data(al["detail"]),
                        },
                    },
                )
            )
    for ac in actions:
        if a <= ac["t"] < b:
            out.append(
                (
                    ac["t"],
                    {
                        "ph": "i",
                        "s": "g",
                        "cat": "action",
                        "name": f"action: {ac['action']}",
                        "pid": 0,
                        "tid": 0,
                        "args": {
                            "pid": ac["pid"],
                            "result": red.text(ac["result"]),
                            "detail": red.data(ac["detail"]),
                        },
                    },
                )
            )
    out.sort(key=lambda x: x[0])
    for t, ev in out:
        ev["ts"] = int(us(t))
        yield ev


def agent_counters(ctx, reader, a, b, us):
    for r in reader.recorded.agent_rows(a, b):
        if r["proc"] not in ctx.procs:
            continue
        pid = int(ctx.trace_pid_of[r["proc"]])
        ts = int(us(r["t"]))
        alloc = {c: r[c] for c in ALLOCATOR_ARGS if r[c] is not None}
        if alloc:
            yield {
                "ph": "C",
                "pid": pid,
                "tid": 0,
                "ts": ts,
                "name": f"{r['device']} allocator",
                "args": alloc,
            }
        buckets = {c: r[c] for c in BUCKET_COLUMNS if r[c] is not None}
        if buckets:
            yield {
                "ph": "C",
                "pid": pid,
                "tid": 0,
                "ts": ts,
                "name": f"{r['device']} buckets",
                "args": buckets,
            }
