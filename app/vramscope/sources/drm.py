"""AMD and Intel GPUs (any DRM driver) as frozen GpuSamples, one pass at a time.

Device figures come from sysfs (sources/drm_sysfs.py), per-process ones from
the processes' DRM fdinfo (sources/drm_fdinfo.py): each DRM client (pdev,
client id) is counted once, for the first process (lowest PID) that holds
it. A process's busy % is its busiest engine over the last pass (the
``drm-engine-*`` ns, or xe's cycle counters); None on the pass it first
appears, as there is nothing to compare with yet.

A process whose DRM fdinfo cannot be read (another user's, without the
privilege to read it) is listed on the GPU its node belongs to, its memory
None and its visibility ``access-denied``.
"""

from __future__ import annotations

import dataclasses

from vramscope.core.samples import ACCESS_DENIED, UNIFIED_MEMORY, GpuProcess, GpuSample
from vramscope.sources import drm_fdinfo, drm_sysfs
from vramscope.sources.host_usage import HostUsage
from vramscope.sources.proc_stat import read_stat
from vramscope.sources.processes import ProcessCache
from vramscope.sources.unified import system_pool

# every process's fd table is walked at most this often (seconds); in between only the
# DRM fds found then are read again (a new GPU process shows within this delay)
FULL_SCAN_EVERY = 5.0
ROCM_BUSY = (
    "ROCm compute queues run outside the kernel's scheduler: their time is in no "
    "fdinfo engine figure, so per-process busy % is n/a on this card"
)
INTEGRATED = (
    "an integrated GPU: its memory is the system's (total and free are the "
    "system's; used is its processes' buffers)"
)

NVIDIA_ONLY = "NVIDIA only (NVML)"
DENIED = "fdinfo not readable (another user's process: access denied)"


class DrmGpus:
    """Reads every non-NVIDIA DRM GPU; ``read(now, first_index)`` -> GpuSamples."""

    def __init__(
        self, proc_root: str | None = None, sys_root: str | None = None, processes: ProcessCache | None = None
    ):
        self.proc_root = proc_root or drm_fdinfo.PROC
        self.sys_root = sys_root or drm_sysfs.SYS
        self.processes = processes if processes is not None else ProcessCache()
        self.host_usage = HostUsage()
        self._engines: dict[tuple, tuple[float, dict, dict]] = {}  # client key -> last figures
        self._holders: dict[int, tuple[str, ...]] = {}  # pid -> its DRM fds (last full scan)
        self._scanned_at: float | None = None
        self._parsed: dict[tuple, tuple] = {}  # (pid, fd) -> (fdinfo text, DrmClient)

    def _scan(self, now: float) -> list[drm_fdinfo.ProcessClients]:
        last = self._scanned_at
        parsed: dict[tuple, tuple] = {}
        before = self._parsed
        if last is None or not last <= now < last + FULL_SCAN_EVERY:
            found = drm_fdinfo.scan(self.proc_root, parsed=before)
            self._scanned_at = now
        else:
            found = [
                p
                for p in (
                    drm_fdinfo.process_clients(pid, self.proc_root, only=fds, parsed=before)
                    for pid, fds in self._holders.items()
                )
                if p is not None
            ]
        self._holders = {p.pid: p.fds for p in found}
        for p in found:  # keep what this pass read, drop the fds that are gone
            for fd in p.fds:
                if (p.pid, fd) in before:
                    parsed[(p.pid, fd)] = before[(p.pid, fd)]
        self._parsed = parsed
        return found

    def read(self, now: float, first_index: int = 0) -> tuple[GpuSample, ...]:
        devices = drm_sysfs.devices(self.sys_root)
        if not devices:
            return ()
        by_slot = {d.pdev: d for d in devices if d.pdev}
        slot_of_node = drm_sysfs.node_slots(self.sys_root)
        # pdev -> pid -> [bytes or None, busy % or None, denied]
        per_gpu: dict[str, dict[int, list]] = {slot: {} for slot in by_slot}
        rocm: set[str] = set()  # GPUs a ROCm (KFD) process uses
        counted: set[tuple] = set()
        engines: dict[tuple, tuple[float, dict, dict]] = {}
        for proc in self._scan(now):
            if proc.denied:
                for node in proc.nodes:
                    slot = slot_of_node.get(node)
                    if slot in per_gpu:
                        per_gpu[slot].setdefault(proc.pid, [None, None, True])
                continue
            for client in proc.clients:
                if client.pdev not in per_gpu or client.key in counted:
                    continue
                counted.add(client.key)
                entry = per_gpu[client.pdev].setdefault(proc.pid, [None, None, False])
                if proc.kfd:
                    rocm.add(client.pdev)
                memory = client.device_memory
                if memory is None and by_slot[client.pdev].vram_total is None:
                    memory = client.system_memory  # an integrated GPU: its memory is the system's
                if memory is not None:
                    entry[0] = (entry[0] or 0) + memory
                engines[client.key] = (now, client.engines, client.cycles)
                busy = self._busy(client, now)
                if busy is not None:
                    entry[1] = busy if entry[1] is None else max(entry[1], busy)
        self._engines = engines
        pids = {pid for procs in per_gpu.values() for pid in procs}
        stats = {pid: read_stat(pid) for pid in pids}  # one /proc/<pid>/stat read each (sources/proc_stat.py)
        infos = self.processes.lookup_many(pids, stats)
        self.processes.prune(pids)
        usage = self.host_usage.read(pids, stats)
        return tuple(
            self._sample(first_index + i, dev, per_gpu.get(dev.pdev, {}), infos, usage, dev.pdev in rocm)
            for i, dev in enumerate(devices)
        )

    def _busy(self, client: drm_fdinfo.DrmClient, now: float) -> int | None:
        before = self._engines.get(client.key)
        if before is None:
            return None
        then, engines, cycles = before
        shares = []
        if now > then:
            for name, ns in client.engines.items():
                old = engines.get(name)
                if old is not None and ns >= old:
                    cap = client.capacity.get(name, 1)
                    shares.append((ns - old) / ((now - then) * 1e9 * cap))
        for name, (n, total) in client.cycles.items():
            old = cycles.get(name)
            if old is not None and total > old[1] and n >= old[0]:
                shares.append((n - old[0]) / (total - old[1]))
        if not shares:
            return None if not (client.engines or client.cycles) else 0
        return max(0, min(100, round(100 * max(shares))))

    @staticmethod
    def _sample(
        index: int, dev: drm_sysfs.DrmDevice, procs: dict, infos: dict, usage: dict, rocm: bool = False
    ) -> GpuSample:
        rows = []
        denied = 0
        for pid, (used, busy, no_access) in sorted(procs.items()):
            info = infos.get(pid)
            if no_access:
                denied += 1
                if info is not None:
                    info = dataclasses.replace(info, visibility=ACCESS_DENIED)
            cpu, rss = usage.get(pid, (None, None))
            # with ROCm compute on the card, no process's busy % is complete: n/a, never
            # a 0 that would call a training run idle
            rows.append(
                GpuProcess(
                    pid=pid, used=used, sm=None if rocm else busy, info=info, cpu_percent=cpu, host_memory=rss
                )
            )
        not_reported = list(dev.not_reported)
        used, total, free = dev.vram_used, dev.vram_total, None
        kind = None
        if used is None and rows:
            known = [p.used for p in rows if p.used is not None]
            used = sum(known) if known else None
        if total is None and dev.driver != "xe":  # integrated: the system's memory is its own
            kind = UNIFIED_MEMORY
            pool = system_pool()
            if pool is not None:
                total, _system_used, free = pool
            not_reported = [r for r in not_reported if r[0] not in ("total", "used")]
            not_reported.append(("total", INTEGRATED))
        if denied:
            not_reported.append(("process_memory", f"{denied} process(es): {DENIED}"))
        if rocm:
            not_reported.append(("process_sm", ROCM_BUSY))
        not_reported += [
            ("mig", f"MIG is {NVIDIA_ONLY}"),
            ("reserved", f"driver-reserved memory is {NVIDIA_ONLY}"),
        ]
        if free is None and total is not None and used is not None:
            free = total - used
        return GpuSample(
            index=index,
            name=dev.name,
            pci_bus_id=dev.pdev,
            total=total,
            used=used,
            free=free,
            util_gpu=dev.busy_percent,
            temperature=dev.temperature,
            power_w=dev.power_w,
            power_limit_w=dev.power_limit_w,
            processes=tuple(rows),
            vendor=dev.vendor,
            memory_kind=kind,
            not_reported=tuple(not_reported),
        )
