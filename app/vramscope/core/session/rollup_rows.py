"""The 10 s peaks of a session file (``gpu_rollup``, ``proc_rollup``): each
GPU's and each process's highest value in a ROLLUP_STEP bucket, written when
the bucket ends, so a long session reopens from its peaks without reading
every pass."""

from __future__ import annotations

import math
import sqlite3

from vramscope.core.samples import GpuSample
from vramscope.core.session.schema import ROLLUP_GPU_COLUMNS, ROLLUP_STEP, array_blob


class RollupRows:
    """The open bucket's peaks (written inside the writer's transaction)."""

    def __init__(self):
        self._bucket: int | None = None
        self._gpu: dict[int, list] = {}  # gpu -> [t_first, peak per ROLLUP_GPU_COLUMNS]
        self._proc: dict[int, list] = {}  # gpu -> [t_first, {proc_id: peak}]

    def start(self, db: sqlite3.Connection, t: float) -> None:
        """A pass at ``t``: the bucket before it is written if ``t`` opens a new one."""
        bucket = math.floor(t / ROLLUP_STEP)
        if bucket != self._bucket:
            self.flush(db)
            self._bucket = bucket

    def add_gpu(self, t: float, gpu: GpuSample) -> None:
        roll = self._gpu.get(gpu.index)
        rvals = [getattr(gpu, c) for c in ROLLUP_GPU_COLUMNS]
        if roll is None:
            self._gpu[gpu.index] = [t, *rvals]
        else:
            for i, v in enumerate(rvals, 1):
                if v is not None and (roll[i] is None or v > roll[i]):
                    roll[i] = v

    def add_processes(self, t: float, gpu_index: int, ids: list, used: list) -> None:
        """The processes (processes.id) on GPU ``gpu_index`` and their bytes (-1: n/a)."""
        rp = self._proc.get(gpu_index)
        if rp is None:
            rp = self._proc[gpu_index] = [t, {}]
        peaks = rp[1]
        for pid_id, u in zip(ids, used):
            old = peaks.get(pid_id)
            if old is None or u > old:
                peaks[pid_id] = u

    def flush(self, db: sqlite3.Connection) -> None:
        """Write the open bucket's peaks (the bucket stays open, empty)."""
        for gpu, roll in self._gpu.items():
            db.execute(
                f"INSERT OR REPLACE INTO gpu_rollup VALUES ({', '.join('?' * (len(ROLLUP_GPU_COLUMNS) + 2))})",
                (roll[0], gpu, *roll[1:]),
            )
        for gpu, (t0, peaks) in self._proc.items():
            ids = list(peaks)
            db.execute(
                "INSERT OR REPLACE INTO proc_rollup VALUES (?, ?, ?, ?, ?)",
                (t0, gpu, len(ids), array_blob("i", ids), array_blob("q", [peaks[i] for i in ids])),
            )
        self._gpu.clear()
        self._proc.clear()

    def forget(self) -> None:
        """The open transaction was rolled back: restart the bucket."""
        self._bucket = None
        self._gpu.clear()
        self._proc.clear()
