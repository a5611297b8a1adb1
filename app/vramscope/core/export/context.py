"""What every exporter needs from a session: processes, GPU ids, names, redaction."""

from __future__ import annotations

import numpy as np

from vramscope.core.export.redact import Redactor
from vramscope.core.session.reader import SessionReader
from vramscope.core.session.schema import gpu_host

GPU_TRACE_PID = 5_000_000  # trace "process" ids for GPUs: above any Linux pid (max 2^22)
REUSED_PID_BASE = 6_000_000  # trace ids for a second process that reused a PID


class ExportContext:
    def __init__(self, reader: SessionReader, redact: bool = False):
        self.reader = reader
        self.procs = reader.processes()
        self.redactor = Redactor(self.procs.values(), enabled=redact)
        self.gpus = {g.index: g for g in reader.gpus()}
        self.gpu_by_uuid = {g.uuid: g.index for g in self.gpus.values() if g.uuid}
        size = max(self.procs, default=0) + 1
        self.pid_of = np.full(size, -1, dtype=np.int64)  # processes.id -> OS pid
        self.trace_pid_of = np.full(size, -1, dtype=np.int64)  # processes.id -> trace pid
        seen: set[int] = set()
        for rec in sorted(self.procs.values(), key=lambda r: (r.first_seen or 0.0, r.id)):
            self.pid_of[rec.id] = rec.pid
            self.trace_pid_of[rec.id] = rec.pid if rec.pid not in seen else REUSED_PID_BASE + rec.id
            seen.add(rec.pid)

    def process_label(self, proc_id: int) -> str:
        rec = self.procs.get(proc_id)
        if rec is None:
            return f"process #{proc_id}"
        what = rec.name or (rec.command.split()[0] if rec.command else None) or "process"
        if not self.redactor.enabled and rec.command:
            what = rec.command if len(rec.command) <= 120 else rec.command[:117] + "..."
        user = self.redactor.user(rec.user)
        return f"{what} (pid {rec.pid}{', ' + user if user else ''})"

    def gpu_label(self, index: int) -> str:
        g = self.gpus.get(index)
        where = gpu_host(self.reader.meta, index)  # a recording of other machines (--host)
        name = f"{where['host']} GPU {where['host_index']}" if where else f"GPU {index}"
        return name + (f": {g.name}" if g is not None and g.name else "")
