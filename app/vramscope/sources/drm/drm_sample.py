"""One DRM GPU's frozen GpuSample from its sysfs figures and its processes' ones.

Which memory a card has decides which figures count:

- a discrete card (its own VRAM): device memory, total and used from sysfs
  where the driver writes them; a process's figure is its buffers in VRAM;
- an integrated GPU (an Intel iGPU, an xe iGPU such as Lunar Lake's, an AMD
  APU): the system's memory is its own (unified memory, as on a GB10): total
  and free are the system's; a process's figure is its buffers in the system
  memory the GPU maps (and an APU's firmware carve-out, amdgpu's "VRAM").

Discrete or integrated is told by what the driver does say: amdgpu APUs by
KFD's topology (a node with CPU cores and SIMDs), else by amdgpu hiding
``mem_info_vram_vendor`` and a carve-out-sized VRAM; Intel by xe writing a
VRAM size for discrete cards only, by ``local*`` regions in the fdinfo of the
card's clients, and by the PCI slot: Intel's integrated GPUs sit on the root
bus (0000:00:02.0), a discrete Arc behind a PCIe port.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vramscope.core.samples import ACCESS_DENIED, INTEL, UNIFIED_MEMORY, GpuProcess, GpuSample
from vramscope.sources.drm.drm_sysfs import DrmDevice
from vramscope.sources.drm.figure_bounds import IMPLAUSIBLE, MAX_BYTES
from vramscope.sources.machine.unified import system_pool

ROCM_BUSY = (
    "ROCm compute queues run outside the kernel's scheduler: their time is in no "
    "fdinfo engine figure, so per-process busy % is n/a on this card"
)
INTEGRATED = (
    "an integrated GPU: its memory is the system's (total and free are the "
    "system's; used is its processes' buffers)"
)
APU = (
    "an AMD APU: its memory is the system's (total and free are the system's plus the "
    "firmware's VRAM carve-out; used is the carve-out in use plus the system memory it "
    "maps, GTT)"
)
I915_TOTAL = (
    "i915 writes no VRAM size in sysfs (a discrete card's is the "
    "DRM_I915_QUERY_MEMORY_REGIONS ioctl's, not read here)"
)
I915_USED = "i915 gives no device-wide VRAM use: the sum of the processes' fdinfo this user can read"
NVIDIA_ONLY = "NVIDIA only (NVML)"
DENIED = "fdinfo not readable (another user's process: access denied)"
CARVE_OUT_MAX = 16 << 30  # an APU's firmware VRAM carve-out is at most this (bytes)


@dataclass(slots=True)
class ProcessFigures:
    """What one pass found of one process on one card (mutable while it is gathered)."""

    device: int | None = None  # bytes in the card's own memory (VRAM, local, carve-out)
    system: int | None = None  # bytes in system memory the GPU maps (GTT)
    kfd: int | None = None  # KFD's VRAM figure (ROCm allocations)
    busy: int | None = None
    denied: bool = False  # its fdinfo could not be read at all
    partial: bool = False  # some of its DRM fds' fdinfo could not be read
    implausible: tuple[str, ...] = ()  # fdinfo / KFD keys whose figure was left out
    unknown: bool = False  # a memory figure of it was left out: its sum is not known

    def add(self, device: int | None, system: int | None) -> None:
        """One more client's figures; sums beyond any card (many clients each near the
        bound) leave its figure unknown, said to be implausible."""
        if device is not None:
            self.device = (self.device or 0) + device
        if system is not None:
            self.system = (self.system or 0) + system
        if not self.unknown and max(self.device or 0, self.system or 0) > MAX_BYTES:
            self.unknown = True
            self.implausible += ("the sum of its DRM clients",)

    def used(self, unified: bool) -> int | None:
        """Its figure: fdinfo's device memory (plus the mapped system memory on an
        integrated GPU, where KFD may place "VRAM" in GTT), or KFD's VRAM figure where
        that is larger: both count the same buffers of its GPU VM, so never their sum."""
        system = self.system if unified else None
        fdinfo = None
        if not self.unknown and (self.device is not None or system is not None):
            fdinfo = (self.device or 0) + (system or 0)
        known = [n for n in (fdinfo, self.kfd) if n is not None]
        return max(known) if known else None


def on_root_bus(pdev: str | None) -> bool:
    """A PCI slot on bus 0 ("0000:00:02.0"): an integrated device, not a card in a slot."""
    parts = (pdev or "").split(":")
    return len(parts) == 3 and parts[1] == "00"


def integrated(dev: DrmDevice, apu: bool | None, local_seen: bool) -> bool:
    """Whether the GPU's memory is the system's. ``apu``: KFD's topology's word for it
    (None: KFD does not list it); ``local_seen``: a client of it has buffers in a
    device region (vram*, local*)."""
    if dev.driver == "amdgpu":
        if apu is not None:
            return apu
        return not dev.vram_vendor and dev.vram_total is not None and dev.vram_total <= CARVE_OUT_MAX
    if dev.vram_total is not None or local_seen:
        return False
    if dev.vendor == INTEL:
        return on_root_bus(dev.pdev)
    return True


def gpu_sample(
    index: int,
    dev: DrmDevice,
    procs: dict[int, ProcessFigures],
    infos: dict,
    usage: dict,
    rocm: bool = False,
    unified: bool = False,
) -> GpuSample:
    rows = []
    denied, partial, implausible = [], [], []
    for pid, figures in sorted(procs.items()):
        info = infos.get(pid)
        used = figures.used(unified)
        if figures.denied and used is None:
            denied.append(pid)
            if info is not None:
                info = dataclasses.replace(info, visibility=ACCESS_DENIED)
        if figures.partial:
            partial.append(pid)
        if figures.implausible:
            implausible.append(f"PID {pid} ({', '.join(figures.implausible[:3])})")
        cpu, rss = usage.get(pid, (None, None))
        # with ROCm compute on the card, no process's busy % is complete: n/a, never
        # a 0 that would call a training run idle
        rows.append(
            GpuProcess(
                pid=pid,
                used=used,
                sm=None if rocm else figures.busy,
                info=info,
                cpu_percent=cpu,
                host_memory=rss,
            )
        )
    not_reported = list(dev.not_reported)
    used, total, free = dev.vram_used, dev.vram_total, None
    kind = None
    if unified:
        kind = UNIFIED_MEMORY
        if dev.driver == "amdgpu":
            known = [n for n in (dev.vram_used, dev.gtt_used) if n is not None]
            used = sum(known) if known else None
        else:
            used = None
        pool = system_pool()
        total = free = None
        if pool is not None:
            total, _system_used, free = pool
            if dev.driver == "amdgpu" and dev.vram_total is not None:
                # the carve-out is memory the system does not count: add it to the pool
                total += dev.vram_total
                free += max(0, dev.vram_total - (dev.vram_used or 0))
        not_reported = [r for r in not_reported if r[0] not in ("total", "used")]
        not_reported.append(("total", APU if dev.driver == "amdgpu" else INTEGRATED))
    elif dev.driver == "i915":
        not_reported = [r for r in not_reported if r[0] != "total"]
        not_reported += [("total", I915_TOTAL), ("used", I915_USED)]
    if used is None and rows:
        known = [p.used for p in rows if p.used is not None]
        used = sum(known) if known else None
        if used is not None and used > MAX_BYTES:
            used = None
            not_reported = [r for r in not_reported if r[0] != "used"]
            not_reported.append(("used", f"the processes' sum is beyond any card: {IMPLAUSIBLE}, left out"))
    memory = []
    if denied:
        memory.append(f"{len(denied)} process(es): {DENIED}")
    if partial:
        pids = ", ".join(map(str, partial[:8]))
        memory.append(f"partial figure for PID {pids}: one of its DRM fds' fdinfo is not readable")
    if implausible:
        memory.append(f"implausible figures left out: {'; '.join(implausible[:4])}")
    if memory:
        not_reported.append(("process_memory", "; ".join(memory)))
    if rocm:
        not_reported.append(("process_sm", ROCM_BUSY))
    not_reported += [
        ("mig", f"MIG is {NVIDIA_ONLY}"),
        ("reserved", f"driver-reserved memory is {NVIDIA_ONLY}"),
    ]
    if free is None and total is not None and used is not None:
        free = max(0, total - used)
    return GpuSample(
        index=index,
        name=dev.name,
        pci_bus_id=dev.pdev,
        total=total,
        used=used,
        free=free,
        util_gpu=dev.busy_percent,
        util_memory=dev.memory_busy_percent,
        temperature=dev.temperature,
        power_w=dev.power_w,
        power_limit_w=dev.power_limit_w,
        processes=tuple(rows),
        vendor=dev.vendor,
        memory_kind=kind,
        not_reported=tuple(not_reported),
    )
