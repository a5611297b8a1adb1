"""The GPU and process samples of a session file as columns, fine and 10 s
peaks (the rollup), and the per-module and MIG rows that go with them -- read
through SalvagingReads, so damage skips rows instead of failing the read.
``SessionReader.samples`` (core/session/reader.py) is one of these."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from vramscope.core.session import mig_rows, module_rows
from vramscope.core.session.columns import (
    GpuColumns,
    ProcColumns,
    empty_proc,
    gpu_columns,
    known_processes,
    proc_columns,
)
from vramscope.core.session.records import ProcessRecord
from vramscope.core.session.salvage import SalvagingReads
from vramscope.core.session.schema import GPU_COLUMNS, ROLLUP_GPU_COLUMNS


class RecordedSamples:
    """The gpu_samples, gpu_rollup, proc_samples, proc_rollup, module and MIG tables."""

    def __init__(self, reads: SalvagingReads, processes: Callable[[], dict[int, ProcessRecord]]):
        self._reads = reads
        self._processes = processes  # the file's processes by id (read once, by the reader)
        self._mig: tuple[dict, dict] | None = None  # (slice statics, process id -> slice)

    def gpu_columns(self, t0: float = -math.inf, t1: float = math.inf) -> GpuColumns:
        cols = self._reads.select("gpu_samples", GPU_COLUMNS, "GPU samples")
        rows = self._reads.ranged(
            f"SELECT t, gpu, {cols} FROM gpu_samples WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "GPU samples",
        )
        return gpu_columns(rows, GPU_COLUMNS, self._reads.damage)

    def gpu_rollup(self, t0: float = -math.inf, t1: float = math.inf) -> GpuColumns:
        if "gpu_rollup" not in self._reads.tables:
            return gpu_columns([], ROLLUP_GPU_COLUMNS, self._reads.damage)
        cols = self._reads.select("gpu_rollup", ROLLUP_GPU_COLUMNS, "GPU 10 s peaks")
        rows = self._reads.ranged(
            f"SELECT t, gpu, {cols} FROM gpu_rollup WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "GPU 10 s peaks",
        )
        return gpu_columns(rows, ROLLUP_GPU_COLUMNS, self._reads.damage)

    def proc_columns(self, t0: float = -math.inf, t1: float = math.inf) -> ProcColumns:
        rows = self._reads.ranged(
            "SELECT t, gpu, n, ids, used, sm, flags FROM proc_samples WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "process samples",
        )
        return self._known(proc_columns(rows, True, self._reads.damage))

    def proc_rollup(self, t0: float = -math.inf, t1: float = math.inf) -> ProcColumns:
        if "proc_rollup" not in self._reads.tables:
            return empty_proc(False)
        rows = self._reads.ranged(
            "SELECT t, gpu, n, ids, used FROM proc_rollup WHERE t >= ? AND t < ? ORDER BY t, gpu",
            t0,
            t1,
            "process 10 s peaks",
        )
        return self._known(proc_columns(rows, False, self._reads.damage))

    def _known(self, cols: ProcColumns) -> ProcColumns:
        return known_processes(cols, np.fromiter(self._processes(), np.int64), self._reads.damage)

    def modules(self, t0: float = -math.inf, t1: float = math.inf) -> list:
        """(time, proc id, ModuleFigures) of the per-module rows recorded in [t0, t1)."""
        return module_rows.all_modules(self._reads.db, t0, t1)

    def mig_tables(self) -> tuple[dict, dict]:
        """MIG slice statics and each process's slice, read once (like processes())."""
        if self._mig is None:
            self._mig = (mig_rows.slice_statics(self._reads.db), mig_rows.proc_slices(self._reads.db))
        return self._mig
