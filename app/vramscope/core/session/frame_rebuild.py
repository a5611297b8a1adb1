"""A recorded frame rebuilt from a session's columns: the GPUs, their processes
(with the MIG slice each ran on) and the agents' reports at one sampled moment
-- what reopening a session shows at a point of its timeline."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from vramscope.core.samples import (
    AgentBuckets,
    AgentDevice,
    AgentEvent,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
)
from vramscope.core.session import mig_rows, module_rows
from vramscope.core.session.columns import opt, text_or_none
from vramscope.core.session.schema import (
    AGENT_COLUMNS,
    BUCKET_COLUMNS,
    FLAG_AGENT,
    FLAG_COMPUTE,
    FLAG_GRAPHICS,
    GPU_COLUMNS,
)


def frame_at(reader, t: float) -> Frame | None:
    """The frame ``reader`` has sampled at ``t`` or the last one before it, rebuilt."""
    times = reader.frame_times()
    if not len(times):
        return None
    i = int(np.searchsorted(times, t, side="right")) - 1
    i = max(0, i)
    tk = float(times[i])
    prev = float(times[i - 1]) if i > 0 else -math.inf
    eps = 1e-4  # passes are >= 0.1 s apart; 1e-9 is below a float's resolution at 1.7e9
    frow = reader.reads.query(
        "SELECT "
        + reader.reads.select(
            "frames",
            ("source", "simulated", "error", "driver_version", "nvml_version", "cuda_driver_version"),
            "a pass",
        )
        + " FROM frames WHERE t = ?",
        (tk,),
        "a pass",
    )
    _source, simulated, error, driver, nvml, cuda = (
        frow[0] if frow else ("session", reader.simulated, None, None, None, None)
    )
    statics = {g.index: g for g in reader.gpus()}
    procs = reader.processes()
    gcols = reader.samples.gpu_columns(tk - eps, tk + eps)
    pcols = reader.samples.proc_columns(tk - eps, tk + eps)
    mig_statics, on_slice = reader.samples.mig_tables()
    gpus = []
    for j in range(len(gcols)):
        gi = int(gcols.gpu[j])
        st = statics.get(gi)
        kw = {c: opt(gcols.values[c][j], c) for c in GPU_COLUMNS}
        sel = pcols.gpu == gi
        plist = []
        for pid_id, used, sm, flags in zip(pcols.proc[sel], pcols.used[sel], pcols.sm[sel], pcols.flags[sel]):
            rec = procs.get(int(pid_id))
            if rec is None:
                continue
            kinds = tuple(
                k for k, bit in (("compute", FLAG_COMPUTE), ("graphics", FLAG_GRAPHICS)) if flags & bit
            ) or ("compute",)
            plist.append(
                mig_rows.tag(
                    GpuProcess(
                        pid=rec.pid,
                        used=None if used < 0 else int(used),
                        kinds=kinds,
                        sm=None if sm < 0 else int(sm),
                        info=rec.info(),
                        has_agent=bool(flags & FLAG_AGENT),
                    ),
                    on_slice,
                    int(pid_id),
                )
            )
        gpus.append(
            GpuSample(
                index=gi,
                name=st.name if st else None,
                uuid=st.uuid if st else None,
                pci_bus_id=st.pci_bus_id if st else None,
                host=st.host if st else None,
                host_index=st.host_index if st else None,
                vendor=st.vendor if st else None,
                memory_kind=st.memory_kind if st else None,
                processes=tuple(plist),
                **kw,
            )
        )
    slices = mig_rows.slices_at(reader.db, tk - eps, tk + eps, {g.index: g for g in gpus}, mig_statics)
    if slices:
        gpus = [
            dataclasses.replace(g, mig_mode=True, slices=slices[g.index]) if g.index in slices else g
            for g in gpus
        ]
    agents = _agents_at(reader, tk, prev)
    return Frame(
        time=tk,
        gpus=tuple(gpus),
        source="session",
        simulated=bool(simulated),
        error=text_or_none(error),
        driver_version=text_or_none(driver),
        nvml_version=text_or_none(nvml),
        cuda_driver_version=text_or_none(cuda),
        agents=agents,
    )


# how far back a replayed frame looks for an agent's newest sample, when its own interval
# is shorter (frames faster than the agent samples: it is still running) or there is none
# (the first frame: an ended run's final dump, read then, holds samples of long before)
AGENT_LOOKBACK = 3.0


def _agents_at(reader, tk: float, prev: float) -> tuple:
    """The agents' reports of the frame at ``tk``: each agent's newest sample up to the
    frame (rows at their own times, or at the frame's in files written before)."""
    since = tk - (max(AGENT_LOOKBACK, tk - prev) if math.isfinite(prev) else AGENT_LOOKBACK)
    newest: dict[tuple, dict] = {}  # (proc, device) -> its newest row (rows come in time order)
    for r in reader.recorded.agent_rows(since, tk + 1e-4):
        newest[(r["proc"], r["device"])] = r
    rows = list(newest.values())
    if not rows:
        return ()
    procs = reader.processes()
    infos = reader.recorded.agent_info()
    events = reader.recorded.events(math.nextafter(prev, math.inf), math.nextafter(tk, math.inf))
    by_proc: dict[int, list[dict]] = {}
    for r in rows:
        by_proc.setdefault(r["proc"], []).append(r)
    reports = []
    for proc_id, devs in by_proc.items():
        rec = procs.get(proc_id)
        if rec is None:
            continue
        info = infos.get(proc_id, {})
        devices = tuple(
            AgentDevice(
                device=d["device"],
                gpu_uuid=d["gpu_uuid"],
                buckets=(
                    AgentBuckets(**{c: d[c] for c in BUCKET_COLUMNS})
                    if any(d[c] is not None for c in BUCKET_COLUMNS)
                    else None
                ),
                **{c: d[c] for c in AGENT_COLUMNS},
            )
            for d in devs
        )
        evs = tuple(
            AgentEvent(kind=e["kind"], time=e["t"], data=e["data"]) for e in events if e["proc"] == proc_id
        )
        reports.append(
            AgentReport(
                pid=rec.pid,
                start_time=rec.start_time,
                hostname=info.get("hostname"),
                time=max(d["t"] for d in devs),  # its newest sample's
                rank=info.get("rank"),
                local_rank=info.get("local_rank"),
                world_size=info.get("world_size"),
                step=devs[0]["step"],
                devices=devices,
                allocator_settings=info.get("allocator_settings") or {},
                events=evs,
                modules=module_rows.modules_at(reader.db, proc_id, tk),
            )
        )
    return tuple(reports)
