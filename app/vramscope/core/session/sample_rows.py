"""A frame's rows in a session file: its GPUs (static facts once, samples each
frame), its processes (one row of arrays per GPU), MIG slices, the 10 s rollup,
agents (their info once, samples, modules, events) and inference servers.

``SampleRows`` writes into the transaction ``SessionWriter`` holds open
(core/session/writer.py) and caches what it wrote before (process and GPU ids,
agents' info); after a rollback ``forget`` reloads those from the file.
"""

from __future__ import annotations

import dataclasses
import sqlite3

from vramscope.core.samples import SAMPLES_PER_REPORT, AgentReport, Frame
from vramscope.core.processes.servers import SERVER_EVENT, SERVER_SERIES
from vramscope.core.session.mig_rows import MigRows
from vramscope.core.session.module_rows import ModuleRows
from vramscope.core.session.process_ids import ProcessIds
from vramscope.core.session.rollup_rows import RollupRows
from vramscope.core.session.schema import (
    AGENT_COLUMNS,
    BUCKET_COLUMNS,
    FLAG_AGENT,
    FLAG_COMPUTE,
    FLAG_GRAPHICS,
    GPU_COLUMNS,
    array_blob,
    json_column,
)


class SampleRows:
    def __init__(self) -> None:
        self.procs = ProcessIds()  # (alerts and actions name processes by these ids too)
        self._gpu_static: dict[int, tuple] = {}
        self._mig = MigRows()
        self._modules = ModuleRows()
        self._agent_info: dict[int, tuple] = {}
        self._agent_time: dict[int, float | None] = {}  # agent -> its newest sample's time written
        self._rollup = RollupRows()

    def flush(self, db: sqlite3.Connection) -> None:
        """The open rollup bucket's rows (at the end of a session)."""
        self._rollup.flush(db)

    def forget(self, db: sqlite3.Connection) -> None:
        """The ids cached for rows of a rolled-back transaction no longer exist:
        reload them from what the file holds, and restart the rollup bucket."""
        self._mig.forget()
        self._modules.forget()
        self._gpu_static.clear()
        self._agent_info.clear()
        self._agent_time.clear()
        self._rollup.forget()
        self.procs.reload(db)

    def write(self, db: sqlite3.Connection, frame: Frame) -> None:
        """The frame's rows, into the open transaction."""
        t = frame.time
        db.execute(
            "INSERT OR REPLACE INTO frames VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                t,
                frame.source,
                int(bool(frame.simulated)),
                frame.error,
                frame.driver_version,
                frame.nvml_version,
                frame.cuda_driver_version,
            ),
        )
        rollup = self._rollup
        rollup.start(db, t)
        proc_id = self.procs.id_of
        gpu_rows, proc_rows = [], []
        for gpu in frame.gpus:
            static = (
                gpu.name,
                gpu.uuid,
                gpu.pci_bus_id,
                gpu.host,
                gpu.host_index,
                gpu.vendor,
                gpu.memory_kind,
            )
            if self._gpu_static.get(gpu.index) != static:
                db.execute(
                    "INSERT OR REPLACE INTO gpus VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (gpu.index, *static)
                )
                self._gpu_static[gpu.index] = static
            values = [getattr(gpu, c) for c in GPU_COLUMNS]
            gpu_rows.append((t, gpu.index, *values, gpu.error))
            rollup.add_gpu(t, gpu)
            ids, used, sm, flags = [], [], [], []
            for proc in gpu.processes:
                pid, start = proc.identity
                pid_id = proc_id(db, pid, start, proc.info, t, gpu.host)
                ids.append(pid_id)
                u = -1 if proc.used is None else int(proc.used)
                used.append(u)
                sm.append(-1 if proc.sm is None else int(proc.sm))
                flags.append(
                    (FLAG_COMPUTE if "compute" in proc.kinds else 0)
                    | (FLAG_GRAPHICS if "graphics" in proc.kinds else 0)
                    | (FLAG_AGENT if proc.has_agent else 0)
                )
            rollup.add_processes(t, gpu.index, ids, used)
            proc_rows.append(
                (
                    t,
                    gpu.index,
                    len(ids),
                    array_blob("i", ids),
                    array_blob("q", used),
                    array_blob("h", sm),
                    bytes(flags),
                )
            )
            if gpu.slices:
                self._mig.write(db, t, gpu, {p.pid: i for p, i in zip(gpu.processes, ids)})
        if gpu_rows:
            marks = ", ".join("?" * (len(GPU_COLUMNS) + 3))
            db.executemany(f"INSERT OR REPLACE INTO gpu_samples VALUES ({marks})", gpu_rows)
            db.executemany("INSERT OR REPLACE INTO proc_samples VALUES (?, ?, ?, ?, ?, ?, ?)", proc_rows)
        for report in frame.agents:
            if isinstance(report, AgentReport):
                self._write_agent(db, t, report)
        for server in frame.servers:
            self._write_server(db, t, server)

    def _write_server(self, db: sqlite3.Connection, t: float, server) -> None:
        """An inference server's pool and metrics, as a "server" event of its process."""
        pid_id = self.procs.id_of(db, server.pid, server.start_time, None, t)
        data = {
            "kind": server.kind,
            "port": server.port,
            "pool": server.pool,
            "pids": list(server.pids),
            "metrics_error": server.metrics_error,
        }
        data.update({m: getattr(server, m) for m in SERVER_SERIES})
        db.execute(
            "INSERT INTO events (t, proc, kind, data) VALUES (?, ?, ?, ?)",
            (t, pid_id, SERVER_EVENT, json_column(data)),
        )

    def _write_agent(self, db: sqlite3.Connection, t: float, report: AgentReport) -> None:
        pid_id = self.procs.id_of(db, report.pid, report.start_time, None, t)
        info = (
            report.hostname,
            report.rank,
            report.local_rank,
            report.world_size,
            json_column(dict(report.allocator_settings)) if report.allocator_settings else None,
        )
        if self._agent_info.get(pid_id) != info:
            db.execute("INSERT OR REPLACE INTO agent_info VALUES (?, ?, ?, ?, ?, ?)", (pid_id, *info))
            self._agent_info[pid_id] = info
        newest = self._agent_time.get(pid_id)
        if report.samples:  # every sample at its own time (a live client's report)
            rows = []
            for sample in report.samples[-SAMPLES_PER_REPORT:]:  # (a host's stream is input)
                devices = (
                    _with_outside(sample.devices, report.devices)
                    if sample.time == report.time
                    else sample.devices
                )
                rows += _device_rows(sample.time, pid_id, sample.step, devices)
            self._agent_time[pid_id] = report.samples[-1].time
        elif report.time is None or report.time != newest:
            # the report's figures at the frame's time (the demo's, a replayed session's); a live
            # client's report without a new sample (its newest is in the file) adds nothing
            rows = _device_rows(t, pid_id, report.step, report.devices)
            self._agent_time[pid_id] = report.time
        else:
            rows = []
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            db.executemany(f"INSERT OR REPLACE INTO agent_samples VALUES ({marks})", rows)
        self._modules.write(db, t, pid_id, report.modules)
        for ev in report.events:
            db.execute(
                "INSERT INTO events (t, proc, kind, data) VALUES (?, ?, ?, ?)",
                (ev.time, pid_id, ev.kind, json_column(dict(ev.data)) if ev.data else None),
            )


def _with_outside(own: tuple, reported: tuple) -> tuple:
    """The newest sample's own devices with the bucket the monitor added to its report,
    outside PyTorch (at the frame's time: sources/agents/agent_reports.with_outside)."""
    outside = {d.device: d.buckets.outside_pytorch for d in reported if d.buckets is not None}
    return tuple(
        dataclasses.replace(d, buckets=dataclasses.replace(d.buckets, outside_pytorch=outside[d.device]))
        if d.buckets is not None and outside.get(d.device) is not None
        else d
        for d in own
    )


def _device_rows(t: float, pid_id: int, step: int | None, devices) -> list[tuple]:
    """agent_samples rows of one sample's devices at ``t``."""
    rows = []
    for dev in devices:
        b = dev.buckets
        buckets = [getattr(b, c) if b is not None else None for c in BUCKET_COLUMNS]
        rows.append(
            (t, pid_id, dev.device, dev.gpu_uuid, step, *[getattr(dev, c) for c in AGENT_COLUMNS], *buckets)
        )
    return rows
