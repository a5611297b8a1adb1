"""The processes of one GPU from NVML, and their frozen values.

Read through the NVML source's one error wrapper (sources/nvml/nvml_source.py):

- compute AND graphics process lists, the newest versioned call the driver
  offers (_v3, else _v2); a process in both lists is counted once with the
  larger figure; ``usedGpuMemory`` not available stays None, never 0;
- per-process SM % from ``nvmlDeviceGetProcessUtilization`` (last seen
  timestamp kept per GPU). NVML returns a sample only for processes with
  non-zero SM use, so a listed process without one is at 0 %; where the call
  is not supported, SM is None;
- the frozen ``GpuProcess`` values: a process whose NVML figures and host
  enrichment (``ProcessInfo``, CPU %, resident memory) did not change since
  the previous pass is the same object again, and a GPU whose every process
  is unchanged gives the same tuple again; a process whose figures moved is
  rebuilt from its previous value (``GpuProcess.with_figures``).

A pass handles every listed process of every GPU, so the loops here are
written for it: the lists and the samples come as plain tuples and columns,
read from the same NVML calls without pynvml's object per entry
(sources/nvml/nvml_raw.py).
"""

from __future__ import annotations

import time

from vramscope.core.samples import GpuProcess
from vramscope.sources.nvml.nvml_errors import FUNCTION_NOT_FOUND, GPU_FATAL, NOT_FOUND, PERMANENT, GpuFailed

# A sample older than this is not "current" SM use any more (seconds).
SM_SAMPLE_WINDOW = 2.0

COMPUTE, GRAPHICS = "compute", "graphics"
# one tuple per combination, so that unchanged kinds compare by identity
_KINDS = {(): {COMPUTE: (COMPUTE,), GRAPHICS: (GRAPHICS,)}}
_KINDS[(COMPUTE,)] = {COMPUTE: (COMPUTE,), GRAPHICS: (COMPUTE, GRAPHICS)}
_KINDS[(GRAPHICS,)] = {COMPUTE: (GRAPHICS, COMPUTE), GRAPHICS: (GRAPHICS,)}
_COMPUTE_ONLY = _KINDS[()][COMPUTE]
_NO_USAGE = (None, None)
_NO_HOST = (None, None, None)


def read_processes(source, gpu, handle) -> dict:
    """{pid: [used, kinds, mig uuid]} from the compute and graphics lists."""
    merged: dict[int, list] = {}
    compute = _process_list(source, gpu, handle, COMPUTE)
    if compute:
        merged = {pid: [used, _COMPUTE_ONLY, None] for pid, used in compute}
        if len(merged) != len(compute):  # a PID listed twice: keep the larger figure
            merged = {}
            _merge(merged, compute, COMPUTE)
    graphics = _process_list(source, gpu, handle, GRAPHICS)
    if graphics:
        _merge(merged, graphics, GRAPHICS)
    return merged


def _merge(merged: dict, entries, kind: str) -> None:
    alone = _KINDS[()][kind]
    for pid, used in entries:
        have = merged.get(pid)
        if have is None:
            merged[pid] = [used, alone, None]
            continue
        if used is not None and (have[0] is None or used > have[0]):
            have[0] = used
        kinds = have[1]
        if kind not in kinds:
            have[1] = _KINDS[kinds][kind] if kinds in _KINDS else kinds + (kind,)


def _process_list(source, gpu, handle, kind: str):
    """The newest versioned list call the driver offers (_v3, else _v2):
    [(pid, used or None)]."""
    chosen = source._proc_calls.get(kind)
    names = (
        [chosen]
        if chosen
        else [
            f"nvmlDevice{'Get' + kind.capitalize()}RunningProcesses_v3",
            f"nvmlDevice{'Get' + kind.capitalize()}RunningProcesses_v2",
        ]
    )
    for name in names:
        fn = source._raw.process_list(name)
        if fn is None:
            continue
        what = f"{kind}_processes"
        result = source._call(gpu, what, fn, handle)
        code = source._last_code
        if result is not None:
            source._proc_calls[kind] = name
            return result
        if code in GPU_FATAL:
            raise GpuFailed(code)
        if code == FUNCTION_NOT_FOUND and not chosen:
            gpu.skip.discard(what)
            continue  # try the older version
        return None
    return None


def read_sm(source, gpu, handle, procs: dict) -> dict | None:
    """SM % of the listed processes: {pid: sm} for those with a sample in the
    last ``SM_SAMPLE_WINDOW`` seconds (the others are at 0 %), or None where
    this GPU gives no per-process utilisation."""
    if not procs:
        gpu.sm.clear()
        gpu.sm_time.clear()
        return None
    if "process_utilization" in gpu.skip:
        return None
    samples = source._call(
        gpu,
        "process_utilization",
        source._raw.utilization,
        handle,
        gpu.util_last_seen,
    )
    code = source._last_code
    if samples is None and code != NOT_FOUND:  # NOT_FOUND: no new samples
        if code in GPU_FATAL:
            raise GpuFailed(code)
        if code in PERMANENT:
            gpu.skip.add("process_utilization")
        return None
    if samples and samples[0]:
        _remember_samples(gpu, samples)
    stamps = gpu.sm_time
    # NVML stamps samples with the CPU wall clock, whatever `now` the caller uses
    oldest = int((time.time() - SM_SAMPLE_WINDOW) * 1e6)
    if stamps and (min(stamps.values()) < oldest or not procs.keys() >= stamps.keys()):
        keep = [pid for pid, ts in stamps.items() if ts >= oldest and pid in procs]
        gpu.sm = {pid: gpu.sm[pid] for pid in keep}
        gpu.sm_time = {pid: stamps[pid] for pid in keep}
    return dict(gpu.sm)


def _remember_samples(gpu, samples) -> None:
    """gpu.sm[pid], gpu.sm_time[pid]: SM % and timestamp of each process's newest
    sample (``samples``: the columns pids, SM %s, timestamps)."""
    pids, sms, stamps = samples
    last_seen = gpu.util_last_seen
    sm, when = gpu.sm, gpu.sm_time
    if min(stamps) >= last_seen and len(set(pids)) == len(pids):
        # the usual answer (NVML gives samples newer than last_seen): one per
        # process, each newer than anything remembered
        sm.update(zip(pids, sms))
        when.update(zip(pids, stamps))
    else:
        for pid, value, ts in zip(pids, sms, stamps):
            if ts >= when.get(pid, ts):
                sm[pid] = value
                when[pid] = ts
    newest = max(stamps)
    if newest > last_seen:
        gpu.util_last_seen = newest


class HostFigures:
    """{pid: (ProcessInfo, cpu %, host bytes)} of the last pass (``figures``),
    each the previous pass's tuple again where equal, so that an unchanged
    one is the same object; ``changed``: the PIDs whose tuple is new this
    pass; ``passes``: how many passes have been read."""

    __slots__ = ("figures", "changed", "passes")

    def __init__(self):
        self.figures: dict = {}
        self.changed: set = set()
        self.passes = 0

    def update(self, pids, infos: dict, usage: dict) -> None:
        previous, current, changed = self.figures, {}, set()
        for pid in pids:
            now = (infos.get(pid), *usage.get(pid, _NO_USAGE))
            old = previous.get(pid)
            if old == now:
                current[pid] = old
            else:
                current[pid] = now
                changed.add(pid)
        self.figures, self.changed = current, changed
        self.passes += 1


def frozen_processes(gpu, procs: dict, sm: dict | None, host: HostFigures) -> tuple[GpuProcess, ...]:
    """The GPU's processes as frozen values (``sm``: read_sm(); ``host``: this pass's).

    The previous pass's tuple again when nothing about any process changed
    since the previous pass (the GPU read then too); else each unchanged
    process's previous value, each moved one rebuilt from its previous value
    (``gpu.last_procs``: pid -> (figures, host figures, value))."""
    order = list(procs)
    seen = gpu.last_seen
    if (
        seen is not None
        and seen[0] == host.passes - 1
        and seen[1] == procs
        and seen[2] == sm
        and seen[3] == order
        and host.changed.isdisjoint(procs)
    ):
        gpu.last_seen = (host.passes, procs, sm, order)
        return gpu.last_tuple
    gpu.last_seen = (host.passes, procs, sm, order)
    figures_of = host.figures
    previous = gpu.last_procs
    current = {}
    for pid in order:
        figures = figures_of.get(pid, _NO_HOST)
        used, kinds, mig_uuid = procs[pid]
        pid_sm = None if sm is None else sm.get(pid, 0)
        mine = (used, kinds, mig_uuid, pid_sm)
        old = previous.get(pid)
        if old is not None and old[0] == mine and old[1] == figures:
            current[pid] = old
            continue
        info, cpu, rss = figures
        if old is not None and old[0][1:3] == mine[1:3] and old[1][0] is info:
            value = old[2].with_figures(used, pid_sm, cpu, rss)  # the same process, its figures moved
        else:
            value = GpuProcess(
                pid=pid,
                used=used,
                kinds=kinds,
                sm=pid_sm,
                info=info,
                mig_uuid=mig_uuid,
                cpu_percent=cpu,
                host_memory=rss,
            )
        current[pid] = (mine, figures, value)
    gpu.last_procs = current
    gpu.last_tuple = tuple(value for _mine, _figures, value in current.values())
    return gpu.last_tuple
