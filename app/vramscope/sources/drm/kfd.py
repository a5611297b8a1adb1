"""ROCm compute processes as AMD's compute driver (KFD) publishes them in sysfs.

ROCm allocates through ``/dev/kfd``; the kernel lists every process that
opened it under ``/sys/class/kfd/kfd/proc/<pid>/`` with ``vram_<gpu_id>``,
the bytes of VRAM it allocated on that GPU (drivers/gpu/drm/amd/amdkfd/
kfd_process.c; what rocm-smi and amd-smi read; Linux 5.8+). The files are
world-readable, so another user's ROCm run is seen with its memory even where
its fd table is not.

A ``gpu_id`` is a card through the topology:
``/sys/class/kfd/kfd/topology/nodes/<n>/gpu_id`` (0 for a CPU node) and the
node's ``properties`` (``key value`` lines, Documentation ABI
sysfs-class-kfd-topology): ``drm_render_minor`` names its render node
(renderD128), and a node with both ``cpu_cores_count`` and ``simd_count``
is an APU (CPU and GPU in one HSA node, as ROCr decides it). Reads are
bounded, symlinks in the last component refused, figures beyond any card
left out (sources/drm/figure_bounds.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from vramscope.sources.drm.drm_fdinfo import read_bounded
from vramscope.sources.drm.figure_bounds import MAX_BYTES, ImplausibleFigure, bounded_int

KFD = "class/kfd/kfd"  # under the sysfs root
MAX_PROCESSES = 65536  # pids looked at in one pass
MAX_NODES = 256
_SMALL = 4096


@dataclass(frozen=True, slots=True)
class KfdGpu:
    """One GPU node of KFD's topology."""

    gpu_id: int
    render_node: str | None  # "renderD128"
    apu: bool  # CPU cores and SIMDs in one node


@dataclass(frozen=True, slots=True)
class KfdProcess:
    """One process's VRAM per GPU as KFD counts it."""

    pid: int
    vram: dict  # gpu_id -> bytes
    implausible: tuple[str, ...] = ()  # files whose figure was left out


def _int(path: str) -> int | None:
    try:
        return bounded_int(read_bounded(path, _SMALL))
    except (OSError, ValueError):
        return None


def _properties(path: str) -> dict[str, str]:
    try:
        text = read_bounded(path, 4 * _SMALL)
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        out[key] = value.strip()
    return out


def _count(props: dict[str, str], key: str) -> int:
    try:
        return bounded_int(props.get(key, "0"))
    except ValueError:
        return 0


def gpus(sys_root: str) -> dict[int, KfdGpu]:
    """gpu_id -> its topology node, for every GPU node KFD lists (none without KFD)."""
    base = f"{sys_root}/{KFD}/topology/nodes"
    try:
        names = sorted(n for n in os.listdir(base) if n.isascii() and n.isdigit())[:MAX_NODES]
    except OSError:
        return {}
    out = {}
    for name in names:
        gpu_id = _int(f"{base}/{name}/gpu_id")
        if not gpu_id:
            continue  # a CPU node
        props = _properties(f"{base}/{name}/properties")
        minor = _count(props, "drm_render_minor")
        out[gpu_id] = KfdGpu(
            gpu_id=gpu_id,
            render_node=f"renderD{minor}" if minor else None,
            apu=_count(props, "cpu_cores_count") > 0 and _count(props, "simd_count") > 0,
        )
    return out


def processes(sys_root: str) -> list[KfdProcess]:
    """Every process KFD lists, with its VRAM per gpu_id, in PID order."""
    base = f"{sys_root}/{KFD}/proc"
    try:
        pids = sorted(int(n) for n in os.listdir(base) if n.isascii() and n.isdigit() and len(n) < 12)[
            :MAX_PROCESSES
        ]
    except OSError:
        return []
    out = []
    for pid in pids:
        try:
            names = [n for n in os.listdir(f"{base}/{pid}") if n.startswith("vram_")]
        except OSError:
            continue  # it ended meanwhile
        vram, implausible = {}, []
        for name in names:
            gpu = name[5:]
            if not (gpu.isascii() and gpu.isdigit()) or len(gpu) > 10:
                continue
            try:
                vram[int(gpu)] = bounded_int(read_bounded(f"{base}/{pid}/{name}", _SMALL), limit=MAX_BYTES)
            except ImplausibleFigure:
                implausible.append(name)
            except (OSError, ValueError):
                continue
        out.append(KfdProcess(pid=pid, vram=vram, implausible=tuple(implausible)))
    return out
