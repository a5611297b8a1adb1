"""AMD and Intel GPUs (any DRM driver) as frozen GpuSamples, one pass at a time.

Device figures come from sysfs (sources/drm/drm_sysfs.py), per-process ones from
the processes' DRM fdinfo (sources/drm/drm_fdinfo.py) and, for ROCm compute, from
AMD's compute driver (sources/drm/kfd.py): each DRM client (pdev, client id) is
counted once, for the first process (lowest PID) that holds it; a client
without ``drm-pdev`` is placed by the device node it was read through, one
without ``drm-client-id`` is one client per open file (kcmp). A process's
busy % is its busiest engine over the last pass (the ``drm-engine-*`` ns, or
xe's cycle counters); None on the pass it first appears, as there is nothing
to compare with yet. A counter that reads lower than before is not measured
from: the kernel's drm-usage-stats document has userspace stay with the
previous, larger value until the counter catches up.

A process whose DRM fdinfo cannot be read (another user's, without the
privilege to read it) is listed on the GPU its node belongs to, its memory
None (or KFD's figure, which anyone may read) and its visibility
``access-denied``. How the sample is made: sources/drm/drm_sample.py.
"""

from __future__ import annotations

from vramscope.core.samples import GpuSample
from vramscope.sources.drm import drm_fdinfo, drm_sysfs, kfd
from vramscope.sources.drm.drm_sample import ProcessFigures, gpu_sample, integrated
from vramscope.sources.machine.host_usage import HostUsage
from vramscope.sources.machine.proc_stat import read_stat
from vramscope.sources.machine.processes import ProcessCache

# every process's fd table is walked at most this often (seconds); in between only the
# DRM fds found then are read again (a new GPU process shows within this delay)
FULL_SCAN_EVERY = 5.0


class DrmGpus:
    """Reads every non-NVIDIA DRM GPU; ``read(now, first_index)`` -> GpuSamples."""

    def __init__(
        self, proc_root: str | None = None, sys_root: str | None = None, processes: ProcessCache | None = None
    ):
        self.proc_root = proc_root or drm_fdinfo.PROC
        self.sys_root = sys_root or drm_sysfs.SYS
        self.processes = processes if processes is not None else ProcessCache()
        self.host_usage = HostUsage()
        # client key -> ({engine: (time, ns)}, {class: (cycles, total)}) kept from the last passes
        self._engines: dict[tuple, tuple[dict, dict]] = {}
        self._holders: dict[int, tuple[str, ...]] = {}  # pid -> its DRM fds (last full scan)
        self._scanned_at: float | None = None
        self._parsed: dict[tuple, tuple] = {}  # (pid, fd) -> (fdinfo text, DrmClient)
        self.drivers: tuple[str, ...] = ()  # the DRM drivers of the GPUs the last pass read

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
        self.drivers = tuple(dict.fromkeys(d.driver for d in devices if d.driver))
        if not devices:
            return ()
        slot_of_node = drm_sysfs.node_slots(self.sys_root)
        kfd_gpus = kfd.gpus(self.sys_root)
        slot_of_gpu = {gid: slot_of_node.get(g.render_node or "") for gid, g in kfd_gpus.items()}
        apu = {slot_of_gpu[gid]: g.apu for gid, g in kfd_gpus.items() if slot_of_gpu[gid]}
        per_gpu: dict[str, dict[int, ProcessFigures]] = {d.pdev: {} for d in devices if d.pdev}
        rocm: set[str] = set()  # GPUs a ROCm (KFD) process uses
        local: set[str] = set()  # GPUs a client has device-region buffers on
        counted: set[tuple] = set()
        unnamed: dict[str, list[tuple[int, str, tuple]]] = {}  # node -> id-less clients counted
        engines: dict[tuple, tuple[dict, dict]] = {}
        for proc in self._scan(now):
            if proc.denied:
                for node in proc.nodes:
                    slot = slot_of_node.get(node)
                    if slot in per_gpu:
                        per_gpu[slot].setdefault(proc.pid, ProcessFigures()).denied = True
                continue
            for client, (fd, node) in zip(proc.clients, proc.where):
                pdev = client.pdev or slot_of_node.get(node)
                if pdev not in per_gpu:
                    continue
                key = self._client_key(proc.pid, fd, node, pdev, client, unnamed)
                if key in counted:
                    continue
                counted.add(key)
                entry = per_gpu[pdev].setdefault(proc.pid, ProcessFigures())
                entry.partial = entry.partial or proc.partial
                if proc.kfd:
                    rocm.add(pdev)
                if client.implausible:
                    entry.implausible += client.implausible
                    entry.unknown = entry.unknown or client.memory_implausible
                device = client.device_memory
                if device is not None:
                    local.add(pdev)
                entry.add(device, client.system_memory)
                busy = self._busy(client, key, now, engines)
                if busy is not None:
                    entry.busy = busy if entry.busy is None else max(entry.busy, busy)
        self._engines = engines
        for held in kfd.processes(self.sys_root):
            self._add_kfd(held, slot_of_gpu, per_gpu, rocm)
        pids = {pid for procs in per_gpu.values() for pid in procs}
        stats = {
            pid: read_stat(pid) for pid in pids
        }  # one /proc/<pid>/stat read each (sources/machine/proc_stat.py)
        infos = self.processes.lookup_many(pids, stats)
        self.processes.prune(pids)
        usage = self.host_usage.read(pids, stats)
        return tuple(
            gpu_sample(
                first_index + i,
                dev,
                per_gpu.get(dev.pdev, {}),
                infos,
                usage,
                rocm=dev.pdev in rocm,
                unified=integrated(dev, apu.get(dev.pdev), dev.pdev in local),
            )
            for i, dev in enumerate(devices)
        )

    @staticmethod
    def _client_key(pid: int, fd: str, node: str, pdev: str, client, unnamed: dict) -> tuple:
        """A client's identity: (pdev, driver, drm-client-id); without an id, the open
        file it is (the first fd kcmp says is the same file, else this one)."""
        if client.client_id is not None:
            return (pdev, client.driver, client.client_id)
        seen = unnamed.setdefault(node, [])
        for other_pid, other_fd, key in seen:
            if other_pid != pid and drm_fdinfo.one_file(other_pid, other_fd, pid, fd):
                return key
        key = (pdev, client.driver, None, pid, fd)
        seen.append((pid, fd, key))
        return key

    @staticmethod
    def _add_kfd(held: kfd.KfdProcess, slot_of_gpu: dict, per_gpu: dict, rocm: set) -> None:
        """A ROCm process's VRAM per card as KFD counts it (beside its fdinfo's)."""
        for gpu_id, vram in held.vram.items():
            slot = slot_of_gpu.get(gpu_id)
            if slot not in per_gpu:
                continue
            rocm.add(slot)
            entry = per_gpu[slot].setdefault(held.pid, ProcessFigures())
            entry.kfd = vram
        if held.implausible:
            for gpu_id in {int(n[5:]) for n in held.implausible}:
                slot = slot_of_gpu.get(gpu_id)
                if slot in per_gpu:
                    rocm.add(slot)
                    entry = per_gpu[slot].setdefault(held.pid, ProcessFigures())
                    entry.implausible += tuple(f"KFD {n}" for n in held.implausible)

    def _busy(self, client: drm_fdinfo.DrmClient, key: tuple, now: float, kept: dict) -> int | None:
        """Its busiest engine's share since the figures kept for it; a counter lower
        than the kept one is not measured from (the kept, larger value stays, with the
        time it was read, until the counter catches up: drm-usage-stats.rst)."""
        before = self._engines.get(key)
        old_engines, old_cycles = before if before is not None else ({}, {})
        engines, cycles, shares = {}, {}, []
        went_back = False
        for name, ns in client.engines.items():
            old = old_engines.get(name)
            if old is not None and ns < old[1]:
                engines[name] = old
                went_back = True
                continue
            engines[name] = (now, ns)
            if old is not None and now > old[0]:
                cap = client.capacity.get(name, 1)
                shares.append((ns - old[1]) / ((now - old[0]) * 1e9 * cap))
        for name, (n, total) in client.cycles.items():
            old = old_cycles.get(name)
            if old is not None and (n < old[0] or total < old[1]):
                cycles[name] = old
                went_back = True
                continue
            cycles[name] = (n, total)
            if old is not None and total > old[1]:
                shares.append((n - old[0]) / (total - old[1]))
        kept[key] = (engines, cycles)
        if before is None:
            return None
        if went_back and max(shares, default=0) <= 0:
            return None  # the engine that went back may be the busy one: no figure this pass
        if not shares:
            return None if not (client.engines or client.cycles) else 0
        return max(0, min(100, round(100 * max(shares))))
