"""What every exporter needs from a session: processes, GPU ids, names, hosts, redaction.

A recording of other machines (--host, a fleet) names each GPU and process
by its host and the GPU's index there, as the window did live; a local
recording's host is empty.
"""

from __future__ import annotations

import numpy as np

from vramscope.core.export.redact import Redactor
from vramscope.core.samples import gpu_label
from vramscope.core.session.reader import SessionReader

GPU_TRACE_PID = 5_000_000  # trace "process" ids for GPUs: above any Linux pid (max 2^22)
REUSED_PID_BASE = 6_000_000  # trace ids for a second process that reused a PID


class ExportContext:
    def __init__(self, reader: SessionReader, redact: bool = False):
        self.reader = reader
        self.procs = reader.processes()
        self.gpus = {g.index: g for g in reader.gpus()}
        hosts = [g.host for g in self.gpus.values()] + [p.host for p in self.procs.values()]
        self.redactor = Redactor(self.procs.values(), enabled=redact, hosts=hosts)
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
        host = self.process_host(proc_id)
        return f"{what} (pid {rec.pid}{' on ' + host if host else ''}{', ' + user if user else ''})"

    def place(self, index: int | None) -> tuple[str, int | str]:
        """(host, the GPU's index there) of GPU ``index``: ("", index) on this machine,
        ("", "") for no GPU."""
        if index is None:
            return "", ""
        g = self.gpus.get(index)
        if g is None or g.host is None:
            return "", index
        return self.redactor.host(g.host), index if g.host_index is None else g.host_index

    def process_host(self, proc_id: int | None) -> str:
        """The host a process ran on ("" for this machine or an unknown process)."""
        rec = self.procs.get(proc_id) if proc_id is not None else None
        return self.redactor.host(rec.host) if rec is not None and rec.host else ""

    def gpu_label(self, index: int) -> str:
        g = self.gpus.get(index)
        host, there = self.place(index)
        return gpu_label(index, host or None, there) + (f": {g.name}" if g is not None and g.name else "")
