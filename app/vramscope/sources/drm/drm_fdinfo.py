"""Per-process GPU memory of any DRM driver, from ``/proc/PID/fdinfo/N``.

The kernel's "DRM client usage stats" (Documentation/gpu/drm-usage-stats.rst)
standardise what a DRM file descriptor's fdinfo says: ``key: value`` lines,
keys prefixed ``drm-``, numbers with an optional unit (``KiB``, ``MiB``; none
is bytes). The keys used here:

- ``drm-driver`` (mandatory), ``drm-pdev`` (the PCI slot, ``0000:03:00.0``),
  ``drm-client-id`` (unique per open file of a device: several fds -- dup(),
  fork(), SCM_RIGHTS -- that share one client are counted once);
- memory per region: ``drm-total-<region>``, ``drm-resident-<region>`` (kernel
  6.4+: xe, amdgpu since 6.11, i915) and the older ``drm-memory-<region>``
  (amdgpu: resident bytes in that region). Device memory is the ``vram*`` and
  ``local*`` regions (amdgpu "vram", xe "vram0", i915 "local0");
- engine time: ``drm-engine-<name>: <uint> ns`` (cumulative busy time, divided
  by ``drm-engine-capacity-<name>`` engines) and xe's
  ``drm-cycles-<class>`` / ``drm-total-cycles-<class>`` pairs.

Reads are bounded and refuse symlinks where they open files; a process of
another user whose fd table or fdinfo cannot be read is reported as such,
never a crash. A figure beyond any real card (sources/drm/figure_bounds.py) is
left out and its key named in ``implausible``. A client without
``drm-client-id`` seen through several fds is counted once where kcmp(2)
says they are one file (sources/drm/kcmp.py). The /proc root is injectable
(tests stage a tree).
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field

from vramscope.sources.drm import kcmp
from vramscope.sources.drm.figure_bounds import INT64_MAX, MAX_BYTES, ImplausibleFigure, bounded_int

PROC = "/proc"
MAX_FDINFO = 64 * 1024  # bytes read of one fdinfo file (a real one is < 2 KiB)
MAX_FDS = 65536  # fds looked at per process
_UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "kB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
# amdgpu's fdinfo before the common format (Linux 5.14 to 5.18): "pdev:", "vram mem:
# 17196 kB", "gtt mem:", "cpu mem:" and no drm- keys (nor a client id)
_OLD_AMDGPU = {"vram mem": "vram", "gtt mem": "gtt", "cpu mem": "cpu"}
_NUMBER = re.compile(r"^(\d+)\s*([A-Za-z]*)$")
# regions that are the card's own memory: amdgpu "vram", xe "vram0"/"vram1", i915 "local0"
# and the part of it the firmware set aside, "stolen-local0" (i915 on a discrete card);
# an integrated card's "stolen-system0" is system memory
_DEVICE_REGION = re.compile(r"^(stolen-)?(vram|local)\d*$")
# system memory the GPU does not map (amdgpu "cpu": buffers swapped out of GTT); not
# counted as a unified-memory GPU's use
_UNMAPPED_REGION = "cpu"
# device nodes of the DRM subsystem (Documentation/gpu/drm-uapi.rst: render and primary nodes)
DRM_NODE = re.compile(r"^/dev/dri/(renderD|card)\d+$")
# AMD's compute driver (ROCm): its user-mode queues run without the kernel's
# scheduler, so their time is in no drm-engine-* key (memory is: KFD buffers
# live in the render node's VM)
KFD = "/dev/kfd"


@dataclass(frozen=True, slots=True)
class DrmClient:
    """One DRM client (an open file of a device) as its fdinfo describes it."""

    driver: str
    pdev: str | None
    client_id: int | None
    resident: dict = field(default_factory=dict)  # region -> bytes resident there
    total: dict = field(default_factory=dict)  # region -> bytes of buffers placed there
    engines: dict = field(default_factory=dict)  # engine -> busy ns (cumulative)
    capacity: dict = field(default_factory=dict)  # engine -> how many of it
    cycles: dict = field(default_factory=dict)  # xe class -> (cycles, total cycles)
    implausible: tuple[str, ...] = ()  # keys whose figure was beyond any real card (left out)

    @property
    def key(self) -> tuple:
        return (self.pdev, self.driver, self.client_id)

    @property
    def device_memory(self) -> int | None:
        """Bytes resident in the card's own memory; None where no region of it is listed."""
        regions = [r for r in set(self.resident) | set(self.total) if _DEVICE_REGION.match(r)]
        if not regions:
            return None
        return sum(self.resident.get(r, self.total.get(r, 0)) for r in regions)

    @property
    def system_memory(self) -> int | None:
        """Bytes in the system memory the GPU maps (gtt, system): an integrated GPU's,
        and an APU's beside its carve-out."""
        regions = [
            r
            for r in set(self.resident) | set(self.total)
            if not _DEVICE_REGION.match(r) and r != _UNMAPPED_REGION
        ]
        if not regions:
            return None
        return sum(self.resident.get(r, self.total.get(r, 0)) for r in regions)

    @property
    def memory_implausible(self) -> bool:
        """A memory figure of it was left out: its sums would be short."""
        return any(k.split("-", 2)[1] in _MEMORY_KINDS for k in self.implausible)


def parse_number(value: str, limit: int = INT64_MAX) -> int | None:
    """ "123", "123 KiB", "4 MiB" -> bytes (or a plain count); None for anything else;
    ImplausibleFigure above ``limit`` (however many digits)."""
    m = _NUMBER.match(value.strip())
    if m is None or m.group(2) not in _UNITS:
        return None
    return bounded_int(m.group(1), _UNITS[m.group(2)], limit)


def parse_fdinfo(text: str) -> DrmClient | None:
    """The DRM client an fdinfo text describes; None when it is not a DRM file.

    One pass over the lines; a key is ``drm-<kind>-<rest>`` and only the kinds used
    here have their numbers parsed (amdgpu and xe print ~30 keys, most of them
    shared/active/purgeable figures no view shows)."""
    driver = pdev = cid = None
    resident, total, legacy, engines, capacity = {}, {}, {}, {}, {}
    cycles_now: dict[str, str] = {}
    cycles_total: dict[str, str] = {}
    implausible: list[str] = []
    old: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("drm-"):
            key, sep, value = line.partition(":")
            if sep and (key in _OLD_AMDGPU or key == "pdev"):
                old[key] = value
            continue
        key, sep, value = line.partition(":")
        if not sep or " " in key or "\t" in key:
            continue
        kind, _, rest = key[4:].partition("-")
        value = value.strip()
        if kind == "driver":
            driver = value
        elif kind == "pdev":
            pdev = value
        elif kind == "client" and rest == "id":
            cid = value
        elif kind == "cycles":
            cycles_now[rest] = value
        elif kind == "total" and rest.startswith("cycles-"):
            cycles_total[rest[7:]] = value
        elif kind in _MEMORY_KINDS and rest:
            try:
                n = parse_number(value, MAX_BYTES)
            except ImplausibleFigure:
                implausible.append(key)
                continue
            if n is not None:
                (resident if kind == "resident" else total if kind == "total" else legacy)[rest] = n
        elif kind == "engine" and rest:
            try:
                if rest.startswith("capacity-"):
                    n = parse_number(value)
                    if n:
                        capacity[rest[9:]] = n
                elif value.endswith("ns"):
                    n = parse_number(value[:-2])
                    if n is not None:
                        engines[rest] = n
            except ImplausibleFigure:
                implausible.append(key)
    if not driver and any(k in old for k in _OLD_AMDGPU):
        driver, pdev = "amdgpu", old.get("pdev", "").strip() or None
        for key, region in _OLD_AMDGPU.items():
            try:
                n = parse_number(old.get(key, ""), MAX_BYTES)
            except ImplausibleFigure:
                implausible.append(key)
                continue
            if n is not None:
                legacy[region] = n
    if not driver:
        return None
    cycles = {}
    for name, value in cycles_now.items():
        try:
            n, t = parse_number(value), parse_number(cycles_total.get(name, ""))
        except ImplausibleFigure:
            implausible.append(f"drm-cycles-{name}")
            continue
        if n is not None and t is not None:
            cycles[name] = (n, t)
    for region, n in legacy.items():  # drm-memory-<region> is resident memory (amdgpu)
        resident.setdefault(region, n)
    return DrmClient(
        driver=driver,
        pdev=pdev,
        client_id=int(cid) if cid and cid.isdigit() and len(cid) <= 19 else None,
        resident=resident,
        total=total,
        engines=engines,
        capacity=capacity,
        cycles=cycles,
        implausible=tuple(implausible),
    )


_MEMORY_KINDS = ("resident", "total", "memory")


def read_bounded(path: str, limit: int = MAX_FDINFO) -> str:
    """A file's text, at most ``limit`` bytes, refusing a symlink (OSError as raised)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return os.read(fd, limit).decode("utf-8", "replace")
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class ProcessClients:
    """What one process's DRM fds showed this pass."""

    pid: int
    clients: tuple[DrmClient, ...] = ()
    denied: bool = False  # it holds a DRM node, but its fdinfo could not be read
    nodes: tuple[str, ...] = ()  # the DRM nodes it holds ("renderD128", ...)
    fds: tuple[str, ...] = ()  # its fds that are DRM nodes or /dev/kfd ("3", "7")
    kfd: bool = False  # it holds /dev/kfd: ROCm compute, whose busy time fdinfo does not see
    where: tuple[tuple[str, str], ...] = ()  # (fd, node) each client was read through
    partial: bool = False  # some of its DRM fds' fdinfo could be read, some not


def process_clients(
    pid: int, proc_root: str = PROC, only: tuple[str, ...] | None = None, parsed: dict | None = None
) -> ProcessClients | None:
    """The DRM clients of one process; None when it holds no DRM node (or vanished,
    or its fd table is not readable: another user's process without privileges).
    ``only``: look at these fds alone (the ones a full scan found to be DRM nodes).
    ``parsed``: {(pid, fd): (text, client)} of the previous pass, updated: an fdinfo
    that reads the same as then is not parsed again."""
    fd_dir = f"{proc_root}/{pid}/fd"
    try:
        fds = list(only) if only is not None else os.listdir(fd_dir)[:MAX_FDS]
        if only is not None and not os.path.isdir(fd_dir):
            return None  # it ended
    except OSError:
        return None
    drm_fds = []
    kfd = False
    seen: dict[tuple, tuple[DrmClient, str, str]] = {}
    unnamed: list[tuple[str, str]] = []  # (fd, node) of clients without drm-client-id
    denied = 0
    nodes: dict[str, None] = {}
    for fd in fds:
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target == KFD:
            kfd = True
            drm_fds.append(fd)
            continue
        if not DRM_NODE.match(target):
            continue
        node = target.rsplit("/", 1)[1]
        nodes[node] = None
        drm_fds.append(fd)
        try:
            text = read_bounded(f"{proc_root}/{pid}/fdinfo/{fd}")
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                denied += 1
            continue  # ENOENT: closed or the process ended between the two reads
        if parsed is not None:
            before = parsed.get((pid, fd))
            client = before[1] if before is not None and before[0] == text else parse_fdinfo(text)
            parsed[(pid, fd)] = (text, client)
        else:
            client = parse_fdinfo(text)
        if client is None:
            continue
        if client.client_id is not None:
            seen.setdefault(client.key, (client, fd, node))
        elif not any(n == node and one_file(pid, fd, pid, f) for f, n in unnamed):
            unnamed.append((fd, node))
            seen[(node, fd)] = (client, fd, node)
    if not nodes:
        return None
    return ProcessClients(
        pid=pid,
        clients=tuple(c for c, _fd, _node in seen.values()),
        denied=bool(denied) and not seen,
        nodes=tuple(nodes),
        fds=tuple(drm_fds),
        kfd=kfd,
        where=tuple((fd, node) for _c, fd, node in seen.values()),
        partial=bool(denied) and bool(seen),
    )


def one_file(pid1: int, fd1: str, pid2: int, fd2: str) -> bool:
    """kcmp's answer; False where it cannot say (each fd then counts as its own client)."""
    try:
        return kcmp.same_file(pid1, int(fd1), pid2, int(fd2)) is True
    except ValueError:
        return False


def scan(proc_root: str = PROC, parsed: dict | None = None) -> list[ProcessClients]:
    """Every process of this /proc that holds a DRM node, in PID order."""
    try:
        pids = sorted(int(n) for n in os.listdir(proc_root) if n.isdigit())
    except OSError:
        return []
    out = []
    for pid in pids:
        got = process_clients(pid, proc_root, parsed=parsed)
        if got is not None:
            out.append(got)
    return out
