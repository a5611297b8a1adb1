"""Load a recorded session into a Store, so the window shows it like live data.

What the window needs first is the newest frame and the visible history, so
loading reads only:

- the newest ``fine_points`` passes at full resolution (the Store's fine tier,
  2 h at 1 s by default) -- a few hundred thousand values;
- for everything older, the 10 s peaks the writer stored as it went
  (``gpu_rollup``/``proc_rollup``), which is exactly the Store's coarse tier;
  only the buckets the rollup lacks (a crash's tail, a damaged file) are
  computed from raw samples.

Rings are filled from arrays in one go instead of replaying frames through
``Store.append`` (which would take minutes for a day of 8 GPUs x 50
processes): through ``TieredRing.load``, installed with ``Store.install``.
"""

from __future__ import annotations

import math

import numpy as np

from vramscope.core.agent_figures.agent_keys import series_key as agent_key  # noqa: F401 (the store key, for callers)
from vramscope.core.agent_figures import agent_series
from vramscope.core.store.ring import TieredRing
from vramscope.core.session import mig_rows
from vramscope.core.session.columns import GpuColumns, ProcColumns
from vramscope.core.session.reader import SessionReader
from vramscope.core.session.schema import AGENT_COLUMNS, BUCKET_COLUMNS, ROLLUP_STEP
from vramscope.core.processes.servers import SERVER_EVENT, SERVER_SERIES, server_key
from vramscope.core.processes.stacking import align
from vramscope.core.store.store import GPU_METRICS, PROCESSES_USED, Store, gpu_key, mig_key, proc_key

RAW_CHUNK = 3600.0  # seconds read at a time when peaks must be computed from raw samples


def load_into_store(reader: SessionReader, store: Store | None = None) -> Store:
    store = store if store is not None else Store()
    times = reader.frame_times()
    if not len(times):
        return store
    fine_points = store.fine_points
    step = store.coarse_step
    t_fine0 = float(times[max(0, len(times) - fine_points)])
    end = float(times[-1]) + 1.0
    procs = reader.processes()

    gfine = reader.samples.gpu_columns(t_fine0, end)
    pfine = reader.samples.proc_columns(t_fine0, end)

    # coarse tier: stored peaks, then the buckets they lack from raw samples
    use_rollup = math.isclose(step, ROLLUP_STEP)
    groll = reader.samples.gpu_rollup() if use_rollup else None
    proll = reader.samples.proc_rollup() if use_rollup else None
    roll_end = -math.inf
    if groll is not None and len(groll):
        roll_end = (math.floor(float(groll.t[-1]) / step) + 1) * step
        if proll is not None and len(proll):
            roll_end = min(roll_end, (math.floor(float(proll.t[-1]) / step) + 1) * step)
    g_parts: list[tuple] = []
    p_parts: list[tuple] = []
    if groll is not None and len(groll):
        keep = groll.t < roll_end
        g_parts.append(_gpu_series(groll, keep, GPU_METRICS))
        if proll is not None and len(proll):
            p_parts.append(_proc_series(proll, proll.t < roll_end))
    raw_from = max(roll_end, float(times[0]))
    if raw_from < t_fine0:  # old span without stored peaks: read it in chunks
        t = raw_from
        while t < t_fine0:
            t1 = min(t + RAW_CHUNK, t_fine0)
            g_parts.append(_peaks(_gpu_series(reader.samples.gpu_columns(t, t1), None, GPU_METRICS), step))
            p_parts.append(_peaks(_proc_series(reader.samples.proc_columns(t, t1), None), step))
            t = t1
    g_fine_series = _gpu_series(gfine, None, GPU_METRICS)
    p_fine_series = _proc_series(pfine, None)
    tail_g = _select(g_fine_series, g_fine_series[1] >= raw_from)
    tail_p = _select(p_fine_series, p_fine_series[1] >= raw_from)
    g_parts.append(_peaks(tail_g, step))
    p_parts.append(_peaks(tail_p, step))

    rings: dict[tuple, TieredRing] = {}
    tiers: dict[tuple, tuple] = {}  # key -> (fine t, fine v, coarse t, coarse v)

    def gkey(sid):
        gpu, m = divmod(int(sid), 16)
        return gpu_key(gpu, GPU_METRICS[m])

    def pkey(sid):
        gpu, pid_id = divmod(int(sid), 1 << 32)
        rec = procs.get(pid_id)
        return None if rec is None else proc_key(gpu, rec.pid, rec.start_time)

    for fine, parts, keyf in ((g_fine_series, g_parts, gkey), (p_fine_series, p_parts, pkey)):
        coarse = _concat(parts)
        fine_groups = _groups(fine)
        for sid, (ct, cv) in _groups(coarse).items():
            key = keyf(sid)
            if key is None:
                continue
            ft, fv = fine_groups.pop(sid, (None, None))
            if ft is None:  # not in the newest window: its peaks stand in for raw samples
                ft, fv = ct, cv
            elif ct[0] < ft[0] and math.floor(ct[0] / step) == math.floor(ft[0] / step):
                ct = ct.copy()  # stored peaks carry the bucket's first pass time; the
                ct[0] = ft[0]  # series itself began later in that bucket
            tiers[key] = (ft, fv, ct, cv)
        for sid, (ft, fv) in fine_groups.items():
            key = keyf(sid)
            if key is not None:
                ct, cv = _peaks((np.zeros(len(ft)), ft, fv), step)[1:]
                tiers[key] = (ft, fv, ct, cv)
    tiers.update(_processes_used(tiers, step))
    for key, (ft, fv, ct, cv) in tiers.items():
        rings[key] = _filled_ring(store, ft, fv, ct, cv)

    # MIG slices: their used/total at full resolution over the newest window
    for (gpu, uuid, metric), (t, v) in mig_rows.slice_series(reader.db, t_fine0, end).items():
        ct, cv = _peaks((np.zeros(len(t)), t, v), step)[1:]
        rings[mig_key(gpu, uuid, metric)] = _filled_ring(store, t, v, ct, cv)

    # agents and inference servers: the newest window at full resolution
    series = _agent_series(reader, t_fine0, end, procs)
    series.update(_server_series(reader, t_fine0, end, procs))
    for key, (t, v) in series.items():
        ct, cv = _peaks((np.zeros(len(t)), t, v), step)[1:]
        rings[key] = _filled_ring(store, t, v, ct, cv)

    _install(store, rings, reader.latest_frame(), float(times[0]))
    return store


# -- series as (sid, t, v) arrays, time-ordered within each sid -------------------------
def _gpu_series(cols: GpuColumns, keep, metrics) -> tuple:
    sids, ts, vs = [], [], []
    sel = slice(None) if keep is None else keep
    for m, name in enumerate(metrics):
        if name not in cols.values:
            continue
        sids.append(cols.gpu[sel].astype(np.int64) * 16 + m)
        ts.append(cols.t[sel])
        vs.append(cols.values[name][sel])
    return _concat([(s, t, v) for s, t, v in zip(sids, ts, vs)])


def _proc_series(cols: ProcColumns, keep) -> tuple:
    sel = slice(None) if keep is None else keep
    sid = cols.gpu[sel].astype(np.int64) * (1 << 32) + cols.proc[sel].astype(np.int64)
    v = cols.used[sel].astype(np.float64)
    v[v < 0] = np.nan
    return sid, cols.t[sel], v


def _select(series: tuple, mask) -> tuple:
    return tuple(a[mask] for a in series)


def _concat(parts: list[tuple]) -> tuple:
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.empty(0, np.int64), np.empty(0), np.empty(0)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def _groups(series: tuple) -> dict:
    """sid -> (t, v); each series' samples must already be in time order (they are:
    every part is read in time order and parts are concatenated oldest first)."""
    sid, t, v = series
    if not len(sid):
        return {}
    uniq, dense = np.unique(sid, return_inverse=True)
    small = np.int16 if len(uniq) < 32768 else np.int32
    order = np.argsort(dense.astype(small), kind="stable")  # radix sort: O(n)
    t, v = t[order], v[order]
    counts = np.bincount(dense, minlength=len(uniq))
    ends = np.cumsum(counts)
    starts = ends - counts
    return {int(u): (t[a:b], v[a:b]) for u, a, b in zip(uniq, starts, ends)}


def _peaks(series: tuple, step: float) -> tuple:
    """Per (sid, bucket of ``step`` s): the first time and the peak (NaN-aware)."""
    sid, t, v = series
    if not len(sid):
        return sid, t, v
    bucket = np.floor(t / step).astype(np.int64)
    order = np.lexsort((t, sid))
    sid, t, v, bucket = sid[order], t[order], v[order], bucket[order]
    starts = np.flatnonzero(np.concatenate(([True], (np.diff(sid) != 0) | (np.diff(bucket) != 0))))
    with np.errstate(invalid="ignore"):
        peak = np.fmax.reduceat(v, starts)
    return sid[starts], t[starts], peak


def _agent_series(reader: SessionReader, t0: float, t1: float, procs) -> dict:
    """The agent series the live monitor would have written (core/agent_figures/agent_series.py):
    from the stored agent samples and the stored steps and events."""
    out: dict[tuple, tuple[list, list]] = {}

    def add(points):
        for key, t, value in points:
            if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                ts, vs = out.setdefault(key, ([], []))
                ts.append(t)
                vs.append(math.nan if value is None else float(value))

    for r in reader.recorded.agent_rows(t0, t1):
        rec = procs.get(r["proc"])
        if rec is None:
            continue
        dev = {c: r[c] for c in AGENT_COLUMNS}
        dev["device"] = r["device"]
        dev["buckets"] = {c: r[c] for c in BUCKET_COLUMNS}
        add(agent_series.sample_points(rec.pid, rec.start_time, r["t"], [dev]))
    for ev in reader.recorded.events(t0, t1):
        rec = procs.get(ev["proc"])
        if rec is not None:
            add(agent_series.event_points(rec.pid, rec.start_time, ev["kind"], ev["t"], ev["data"]))
    series = {}
    for k, (ts, vs) in out.items():
        if all(math.isnan(x) for x in vs):
            continue
        t, v = np.asarray(ts, np.float64), np.asarray(vs, np.float64)
        order = np.argsort(t, kind="stable")  # phase readings carry their own times
        series[k] = (t[order], v[order])
    return series


def _server_series(reader: SessionReader, t0: float, t1: float, procs) -> dict:
    """KV-cache use and running/waiting requests from the "server" events."""
    out: dict[tuple, tuple[list, list]] = {}
    for e in reader.recorded.events(t0, t1):
        rec = procs.get(e["proc"]) if e["kind"] == SERVER_EVENT else None
        if rec is None:
            continue
        for metric in SERVER_SERIES:
            value = e["data"].get(metric)
            ts, vs = out.setdefault(server_key(rec.pid, rec.start_time, metric), ([], []))
            ts.append(e["t"])
            vs.append(float(value) if isinstance(value, (int, float)) else math.nan)
    return {
        k: (np.asarray(ts, np.float64), np.asarray(vs, np.float64))
        for k, (ts, vs) in out.items()
        if not all(math.isnan(x) for x in vs)
    }


def _processes_used(tiers: dict, step: float) -> dict:
    """Each GPU's PROCESSES_USED series (the sum of its processes' figures, n/a as
    0) on the GPU's own sample times, as the live store keeps it: exact over the
    raw samples; in the coarse tier the sum of the processes' bucket peaks (an
    upper bound of the live store's peak of the sum, as the stacked view summed
    the processes' peaks before it had this series)."""
    out = {}
    for gkey_, (gft, _gfv, gct, _gcv) in tiers.items():
        if gkey_[0] != "gpu" or gkey_[2] != "used":
            continue
        gpu = gkey_[1]
        fine, coarse = np.zeros(len(gft)), np.zeros(len(gct))
        gbucket = np.floor(gct / step)
        for key, (ft, fv, ct, cv) in tiers.items():
            if key[0] != "proc" or key[1] != gpu:
                continue
            fine += align(gft, ft, fv)
            idx = np.searchsorted(gbucket, np.floor(ct / step))
            ok = idx < len(gbucket)
            ok[ok] &= gbucket[idx[ok]] == np.floor(ct[ok] / step)
            np.add.at(coarse, idx[ok], np.nan_to_num(cv[ok], nan=0.0))
        out[gpu_key(gpu, PROCESSES_USED)] = (gft, fine, gct, coarse)
    return out


def _filled_ring(store: Store, ft, fv, ct, cv) -> TieredRing:
    ring = store.new_ring()
    ring.load(ft, fv, ct, cv)
    return ring


def _install(store: Store, rings: dict, latest, first_time: float) -> None:
    store.install(rings, latest, first_time)
