"""CSV in long form: ``time,host,gpu,pid,metric,value`` -- one value per line.

- ``host``: the machine of a recording of other machines (`--host`, a fleet;
  with ``--redact`` host1, host2, ...); empty for this machine, so a local
  recording has the same columns with ``host`` empty. ``gpu`` is the GPU's
  NVML index on that machine; ``pid`` a process id there.
- GPU metrics: ``gpu`` set, ``pid`` empty, metric = used/total/free/reserved/
  util_gpu/util_memory/temperature/power_w/power_limit_w.
- process metrics: ``gpu`` and ``pid`` set, metric = used (bytes) / sm (%).
- agent metrics: metric = agent.allocated, agent.reserved, ..., agent.bucket.weights,
  ...; ``gpu`` is the NVML index of the agent's device (a device with no GPU,
  like ``cpu``, goes into the name: agent.cpu.allocated).
- text rows: process identity at first sight (metric name/user/command),
  agent events (event.step, event.oom: value = the event's data as JSON),
  alerts (alert.<kind>: the title) and actions (action.<action>: the result);
  ``host`` is that of the process (or of the alert's GPU).

"Not available" values are left out, never written as 0. Times are Unix
seconds with microseconds. Rows are written chunk by chunk in time order;
a day of 8 GPUs x 50 processes never sits in memory at once.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import threading

import numpy as np

from vramscope.core.status import json_text

from vramscope.core.safe_io import safe_write
from vramscope.core.export import module_export, textblock as tb
from vramscope.core.export.context import ExportContext
from vramscope.core.session.reader import SessionReader
from vramscope.core.session.schema import AGENT_COLUMNS, BUCKET_COLUMNS, GPU_COLUMNS

HEADER = b"time,host,gpu,pid,metric,value\n"
FLOAT_METRICS = {"power_w", "power_limit_w"}
METRICS = list(GPU_COLUMNS) + ["sm"]  # process "used" shares GPU_COLUMNS[0]
_USED, _SM = 0, len(GPU_COLUMNS)


@dataclasses.dataclass
class ExportSummary:
    path: str
    rows: int
    bytes: int
    problems: list[str]


def _reader(ctx: ExportContext) -> SessionReader:
    """This thread's reader: each worker thread gets its own SQLite connection."""
    local = ctx.local
    if not hasattr(local, "reader"):
        local.reader = ctx.reader.fork()
        ctx.forks.append(local.reader)
    return local.reader


def _text_rows(ctx: ExportContext, a: float, b: float) -> list[tuple[float, bytes]]:
    """The few rows that are not plain numbers, formatted with the csv module."""
    reader, red = _reader(ctx), ctx.redactor
    rows: list[tuple[float, str, int | str, int | str, str, object]] = []
    for rec in ctx.procs.values():
        if rec.first_seen is not None and a <= rec.first_seen < b:
            for metric, value in (
                ("name", rec.name),
                ("user", red.user(rec.user)),
                ("command", red.command(rec.command)),
            ):
                if value is not None:
                    rows.append((rec.first_seen, ctx.process_host(rec.id), "", rec.pid, metric, value))
    for r in reader.recorded.agent_rows(a, b):
        rec = ctx.procs.get(r["proc"])
        if rec is None:
            continue
        gpu = ctx.gpu_by_uuid.get(r["gpu_uuid"])
        prefix = "agent." if gpu is not None else f"agent.{r['device']}."
        host, there = ctx.place(gpu)
        where = (host or ctx.process_host(rec.id), there)
        for c in AGENT_COLUMNS:
            if r[c] is not None:
                rows.append((r["t"], *where, rec.pid, prefix + c, r[c]))
        for c in BUCKET_COLUMNS:
            if r[c] is not None:
                rows.append((r["t"], *where, rec.pid, f"{prefix}bucket.{c}", r[c]))
    rows.extend(module_export.csv_rows(ctx, reader, a, b))
    for e in reader.recorded.events(a, b):
        rec = ctx.procs.get(e["proc"])
        rows.append(
            (
                e["t"],
                ctx.process_host(e["proc"]),
                "",
                rec.pid if rec else "",
                f"event.{e['kind']}",
                json_text.dumps(red.data(e["data"]), sort_keys=True),
            )
        )
    for al in ctx.alerts:
        if a <= al["t"] < b:
            rec = ctx.procs.get(al["proc"])
            host, there = ctx.place(al["gpu"])
            rows.append(
                (
                    al["t"],
                    host or ctx.process_host(al["proc"]),
                    there,
                    rec.pid if rec else "",
                    f"alert.{al['kind']}",
                    red.text(al["title"]) or "",
                )
            )
    for ac in ctx.actions:
        if a <= ac["t"] < b:
            host = ctx.process_host(ac["proc"]) or red.host(ac["detail"].get("host")) or ""
            rows.append(
                (
                    ac["t"],
                    host,
                    "",
                    "" if ac["pid"] is None else ac["pid"],
                    f"action.{ac['action']}",
                    red.text(ac["result"]) or "",
                )
            )
    return [(row[0], _csv_line((f"{row[0]:.6f}",) + row[1:])) for row in sorted(rows, key=lambda r: r[0])]


def _csv_line(fields) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(fields)
    return buf.getvalue().encode()


def _numeric_block(ctx: ExportContext, a: float, b: float) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Lines for GPU and process values of [a, b), ordered by time, GPU, GPU-then-processes.

    Built without sorting the (large) value arrays: every (pass, GPU) group gets
    its slots -- the GPU metrics, then ``used`` and ``sm`` of each process in
    recorded order -- and absent values are dropped afterwards.
    """
    g = _reader(ctx).samples.gpu_columns(a, b)
    p = _reader(ctx).samples.proc_columns(a, b)
    if not len(g) and not len(p):
        return b"", np.empty(0, np.int64), np.empty(0)
    gkey = np.round(g.t * 1e6).astype(np.int64) * 4096 + g.gpu
    pkey = np.round(p.t * 1e6).astype(np.int64) * 4096 + p.gpu
    groups = np.union1d(gkey, pkey)
    gi = np.searchsorted(groups, gkey)
    pi = np.searchsorted(groups, pkey)
    m = len(GPU_COLUMNS)
    slots = np.zeros(len(groups), np.int64)
    slots[gi] += m
    slots += 2 * np.bincount(pi, minlength=len(groups))
    start = np.concatenate(([0], np.cumsum(slots)[:-1]))
    total = int(slots.sum())
    grp = np.empty(total, np.int64)
    kind = np.empty(total, np.int64)  # metric index (GPU) or len(METRICS) + 2*proc_id + is_sm
    val = np.empty(total, np.float64)
    dst = (start[gi][:, None] + np.arange(m)[None, :]).ravel()
    grp[dst] = np.repeat(gi, m)
    kind[dst] = np.tile(np.arange(m), len(gi))
    val[dst] = np.stack([g.values[c] for c in GPU_COLUMNS], axis=1).ravel()
    if len(p):
        first_of_group = np.searchsorted(pi, pi, side="left")  # pi is sorted (rows by t, gpu)
        rank = np.arange(len(pi)) - first_of_group
        base = start[pi] + np.where(np.isin(pi, gi), m, 0) + 2 * rank
        grp[base] = pi
        grp[base + 1] = pi
        kind[base] = len(METRICS) + 2 * p.proc.astype(np.int64)
        kind[base + 1] = len(METRICS) + 2 * p.proc.astype(np.int64) + 1
        val[base] = np.where(p.used >= 0, p.used, np.nan)
        val[base + 1] = np.where(p.sm >= 0, p.sm, np.nan)
    ok = ~np.isnan(val)
    grp, kind, val = grp[ok], kind[ok], val[ok]
    n = len(grp)
    # "time,host,gpu," per group; "pid,metric," per kind; then the value
    gtimes = (groups // 4096).astype(np.int64)
    ggpu = groups % 4096
    here = np.unique(ggpu)
    places = [_csv_line(ctx.place(int(i))).rstrip(b"\n") for i in here]
    head = tb.join(
        [
            tb.fixed(gtimes, 6),
            tb.lit(b",", len(groups)),
            tb.table(np.searchsorted(here, ggpu), places),
            tb.lit(b",", len(groups)),
        ]
    )
    decimals = np.where(np.isin(kind, [GPU_COLUMNS.index(c) for c in FLOAT_METRICS]), 3, 0)
    text, ends = tb.render(
        [tb.take(head, grp), tb.take(ctx.csv_kinds, kind), tb.number(val, decimals), tb.lit(b"\n", n)]
    )
    return text, ends, (gtimes[grp] / 1e6)


def _chunk_bytes(ctx: ExportContext, a: float, b: float) -> tuple[list, int]:
    """The text of [a, b): numeric block with the few text rows interleaved by time."""
    text, ends, t = _numeric_block(ctx, a, b)
    extra = _text_rows(ctx, a, b)
    if not extra:
        return [text], len(ends)
    view = memoryview(text)
    at = np.searchsorted(t, np.array([w for w, _ in extra]), side="right")
    parts, pos = [], 0
    for i, (_, line) in zip(at.tolist(), extra):
        cut = int(ends[i - 1]) if i > 0 else 0
        if cut > pos:
            parts.append(view[pos:cut])
            pos = cut
        parts.append(line)
    parts.append(view[pos:])
    return parts, len(ends) + len(extra)


def export_csv(
    reader: SessionReader,
    out_path: str | os.PathLike,
    *,
    redact: bool = False,
    chunk_seconds: float = 600.0,
    workers: int = 2,
) -> ExportSummary:
    """Write the CSV; chunks are formatted on ``workers`` threads (numpy and SQLite
    release the GIL) and written in order, at most ``workers + 1`` chunks in memory."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    ctx = ExportContext(reader, redact)
    ctx.alerts = reader.recorded.alerts()
    kinds = [b"," + name.encode() + b"," for name in METRICS[: len(GPU_COLUMNS)]]
    kinds += [b""] * (len(METRICS) - len(GPU_COLUMNS))
    for pid in ctx.pid_of:
        kinds += [b"%d,used," % pid, b"%d,sm," % pid] if pid >= 0 else [b",used,", b",sm,"]
    ctx.csv_kinds = tb.table(np.arange(len(kinds)), kinds)
    ctx.actions = reader.recorded.actions()
    reader.frame_times()  # shared by the forks
    ctx.local, ctx.forks = threading.local(), []
    rows = 0
    with safe_write.replacing(out_path) as f, ThreadPoolExecutor(max(1, workers)) as pool:
        f.write(HEADER)
        pending: deque = deque()

        def drain(keep: int) -> None:
            nonlocal rows
            while len(pending) > keep:
                parts, n = pending.popleft().result()
                for part in parts:
                    f.write(part)
                rows += n

        for a, b in reader.time_chunks(chunk_seconds):
            pending.append(pool.submit(_chunk_bytes, ctx, a, b))
            drain(max(1, workers))
        drain(0)
        size = f.tell()
    for fork in ctx.forks:
        fork.close()
    return ExportSummary(str(out_path), rows, size, list(reader.problems))
