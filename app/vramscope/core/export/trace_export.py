"""Chrome/Perfetto trace JSON (opens in ui.perfetto.dev and chrome://tracing).

- one trace "process" per GPU (pid 5000000 + index) with counter tracks
  memory used/total/reserved, utilization, temperature, power;
- one trace process per OS process (its pid; a reused pid, or the same pid
  on another host, gets a separate id) with a counter track per GPU it used
  (``GPU0 memory used``, ``GPU0 SM``);
- a recording of other machines (--host, a fleet) names the host in every
  trace process name: ``lab-a GPU 0: NVIDIA A100``, ``train.py (pid 4242 on
  lab-a, alice)``; a process's GPU tracks use the GPU's index on its host;
- for processes with the agent: ``cuda:0 allocator`` (allocated, reserved,
  inactive_split, peak_allocated) and ``cuda:0 buckets`` (one track per bucket);
- instant events: agent steps and OOMs (on the process), alerts and
  actions (global).

Counters are step functions in a trace, so a GPU or process counter is
written when its value changes, when it reappears after a gap, and at its
last sample; a process that leaves a GPU drops to 0 there (NVML no longer
lists it). ``ts`` is microseconds since the session start (the start's
Unix time is in ``otherData.start_time``). Written chunk by chunk.

Here: the counters of GPUs and processes and the file around them; which
counter samples are kept: core/export/change_filter.py; the instant events and
the agents' tracks: core/export/trace_events.py.
"""

from __future__ import annotations

import json
import os

import numpy as np

from vramscope.core.safe_io import safe_write
from vramscope.core.status import json_text
from vramscope.core.export import module_export, textblock as tb
from vramscope.core.export.context import GPU_TRACE_PID, ExportContext
from vramscope.core.export.change_filter import ChangeFilter
from vramscope.core.export.csv_export import FLOAT_METRICS, ExportSummary
from vramscope.core.export.trace_events import agent_counters, instant_events
from vramscope.core.session.reader import SessionReader

# (column, event name, arg key) for GPU counters
GPU_TRACKS = (
    ("used", "memory", "used"),
    ("total", "memory", "total"),
    ("reserved", "memory", "reserved"),
    ("util_gpu", "utilization", "gpu"),
    ("util_memory", "utilization", "memory"),
    ("temperature", "temperature", "celsius"),
    ("power_w", "power", "watts"),
)


def _dumps(value) -> str:
    return json_text.dumps(value, separators=(",", ":"), sort_keys=True)  # NaN/Inf: null


def export_trace(
    reader: SessionReader, out_path: str | os.PathLike, *, redact: bool = False, chunk_seconds: float = 600.0
) -> ExportSummary:
    ctx = ExportContext(reader, redact)
    times = reader.frame_times()
    t0 = float(times[0]) if len(times) else 0.0

    def us(t):
        return np.round((np.asarray(t, np.float64) - t0) * 1e6).astype(np.int64)

    float_tracks = {m for m, (c, _, _) in enumerate(GPU_TRACKS) if c in FLOAT_METRICS}
    # name and arg-key tables for the vectorised rows
    names = [json.dumps(n).encode() for _, n, _ in GPU_TRACKS]
    argkeys = [json.dumps(a).encode() for _, _, a in GPU_TRACKS] + [b'"used"', b'"percent"']
    used_key, pct_key = len(GPU_TRACKS), len(GPU_TRACKS) + 1
    proc_name: dict[tuple[int, int], int] = {}

    def proc_name_index(gpu: np.ndarray, sm: np.ndarray) -> np.ndarray:
        out = np.empty(len(gpu), np.int64)
        for g, w in set(zip(gpu.tolist(), sm.tolist())):
            if (g, w) not in proc_name:
                proc_name[(g, w)] = len(names)
                names.append(json.dumps(f"GPU{ctx.place(g)[1]} {'SM' if w else 'memory'}").encode())
            out[(gpu == g) & (sm == w)] = proc_name[(g, w)]
        return out

    # series ids: GPU tracks gpu*16+m; process tracks ((gpu<<32)+proc)*2 + is_sm
    def gpu_rows(sid):
        m = sid % 16
        return GPU_TRACE_PID + sid // 16, m, m, np.isin(m, list(float_tracks)) * 3

    def proc_rows(sid):
        sm = sid % 2
        base = sid // 2
        gpu, proc = base >> 32, base & 0xFFFFFFFF
        return (ctx.trace_pid_of[proc], proc_name_index(gpu, sm), np.where(sm == 1, pct_key, used_key), 0)

    rows = 0
    with safe_write.replacing(out_path) as f:

        def event(obj) -> None:
            nonlocal rows
            f.write(_dumps(obj).encode() + b",\n")
            rows += 1

        def counters(rowsf, sid, tick, val) -> None:
            nonlocal rows
            if not len(sid):
                return
            order = np.argsort(tick, kind="stable")
            sid, tick, val = sid[order], tick[order], val[order]
            pid, name_idx, key_idx, decimals = rowsf(sid)
            n = len(sid)
            text, _ = tb.render(
                [
                    tb.lit(b'{"ph":"C","pid":', n),
                    tb.integer(pid),
                    tb.lit(b',"tid":0,"ts":', n),
                    tb.integer(us(times[tick])),
                    tb.lit(b',"name":', n),
                    tb.table(name_idx, names),
                    tb.lit(b',"args":{', n),
                    tb.table(key_idx, argkeys),
                    tb.lit(b":", n),
                    tb.number(val, decimals),
                    tb.lit(b"}},\n", n),
                ]
            )
            f.write(text)
            rows += n

        f.write(b'{"traceEvents":[\n')
        for index in sorted(ctx.gpus):
            event(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": GPU_TRACE_PID + index,
                    "tid": 0,
                    "args": {"name": ctx.gpu_label(index)},
                }
            )
            event(
                {
                    "ph": "M",
                    "name": "process_sort_index",
                    "pid": GPU_TRACE_PID + index,
                    "tid": 0,
                    "args": {"sort_index": index},
                }
            )
        for pid_id in ctx.procs:
            event(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": int(ctx.trace_pid_of[pid_id]),
                    "tid": 0,
                    "args": {"name": ctx.process_label(pid_id)},
                }
            )
        alerts, actions = reader.recorded.alerts(), reader.recorded.actions()
        gpu_filter, proc_filter = ChangeFilter(len(times)), ChangeFilter(len(times))
        for a, b in reader.time_chunks(chunk_seconds):
            g = reader.samples.gpu_columns(a, b)
            if len(g):
                tick = np.searchsorted(times, g.t)
                sid = np.concatenate([g.gpu.astype(np.int64) * 16 + m for m in range(len(GPU_TRACKS))])
                val = np.concatenate([g.values[c] for c, _, _ in GPU_TRACKS])
                tick = np.tile(tick, len(GPU_TRACKS))
                idx = gpu_filter(sid, tick, val)
                counters(gpu_rows, sid[idx], tick[idx], val[idx])
                gpu_filter.take_gaps()  # a GPU missing from a pass: its track just holds
            p = reader.samples.proc_columns(a, b)
            if len(p):
                tick = np.searchsorted(times, p.t)
                base = (p.gpu.astype(np.int64) << 32) + p.proc
                used = np.where(p.used >= 0, p.used, np.nan).astype(np.float64)
                has_sm = p.sm >= 0
                sid = np.concatenate((base * 2, base[has_sm] * 2 + 1))
                val = np.concatenate((used, p.sm[has_sm].astype(np.float64)))
                tick = np.concatenate((tick, tick[has_sm]))
                idx = proc_filter(sid, tick, val)
                counters(proc_rows, sid[idx], tick[idx], val[idx])
                _drops(counters, proc_rows, proc_filter.take_gaps())
            for ev in instant_events(ctx, reader, a, b, alerts, actions, us):
                event(ev)
            for ev in agent_counters(ctx, reader, a, b, us):
                event(ev)
            for ev in module_export.trace_counters(ctx, reader, a, b, us):
                event(ev)
        for flt, rowsf in ((gpu_filter, gpu_rows), (proc_filter, proc_rows)):
            closing, ends = flt.finish()
            if closing:
                counters(
                    rowsf,
                    np.array([c[0] for c in closing], np.int64),
                    np.array([c[1] for c in closing], np.int64),
                    np.array([c[2] for c in closing], np.float64),
                )
            if flt is proc_filter:
                _drops(counters, proc_rows, ends)
        end_ts = int(us(times[-1])) if len(times) else 0
        f.write(
            _dumps({"ph": "i", "s": "g", "name": "session end", "pid": 0, "tid": 0, "ts": end_ts}).encode()
        )
        other = {
            "start_time": t0,
            "source": reader.meta.get("source"),
            "simulated": reader.simulated,
            "exporter": "vramscope",
            "redacted": bool(redact),
            "hosts": list(dict.fromkeys(h for h, _ in map(ctx.place, sorted(ctx.gpus)) if h)),
        }
        if not redact:
            other["host"] = reader.meta.get("host")
        f.write(b'\n],"displayTimeUnit":"ms","otherData":' + _dumps(other).encode() + b"}\n")
        size = f.tell()
    return ExportSummary(str(out_path), rows + 1, size, list(reader.problems))


def _drops(counters, proc_rows, gaps) -> None:
    """A process gone from a GPU holds nothing there: its memory track drops to 0
    (NVML no longer lists it); its SM track simply ends."""
    gaps = [(sid, k) for sid, k in gaps if sid % 2 == 0]
    if gaps:
        counters(
            proc_rows,
            np.array([x[0] for x in gaps], np.int64),
            np.array([x[1] for x in gaps], np.int64),
            np.zeros(len(gaps)),
        )
