"""KFD's sysfs tree as the kernel writes it (drivers/gpu/drm/amd/amdkfd:
kfd_topology.c for ``topology/nodes``, kfd_process.c for ``proc``), for the
tests of ROCm processes and APUs beside the DRM trees of tests/drm_trees.py."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from drm_trees import GiB

# the keys of one KFD topology node's ``properties`` (drivers/gpu/drm/amd/amdkfd/
# kfd_topology.c, node_show), in the kernel's order; the figures vary per node
KFD_PROPERTIES = (
    "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count", "io_links_count",
    "p2p_links_count", "cpu_core_id_base", "simd_id_base", "max_waves_per_simd",
    "lds_size_in_kb", "gds_size_in_kb", "num_gws", "wave_front_size", "array_count",
    "simd_arrays_per_engine", "cu_per_simd_array", "simd_per_cu", "max_slots_scratch_cu",
    "gfx_target_version", "vendor_id", "device_id", "location_id", "domain",
    "drm_render_minor", "hive_id", "num_sdma_engines", "num_sdma_xgmi_engines",
    "num_sdma_queues_per_engine", "num_cp_queues", "max_engine_clk_fcompute",
    "local_mem_size", "fw_version", "capability", "debug_prop", "sdma_fw_version",
    "unique_id", "num_xcc", "max_engine_clk_ccompute",
)  # fmt: skip


@dataclass
class KfdNode:
    gpu_id: int  # 0: a CPU node
    cpu_cores: int = 0
    simds: int = 0
    render_minor: int = 0


def stage_kfd(sys_root: pathlib.Path, nodes: list[KfdNode], vram: dict[int, dict[int, int | str]]) -> None:
    """/sys/class/kfd/kfd as the kernel writes it: topology/nodes/<n>/{gpu_id,
    name, properties} and proc/<pid>/{pasid, vram_<gpu_id>, sdma_<gpu_id>};
    ``vram``: pid -> {gpu_id: bytes (or any text, for a hostile tree)}."""
    kfd = sys_root / "class" / "kfd" / "kfd"
    for n, node in enumerate(nodes):
        d = kfd / "topology" / "nodes" / str(n)
        d.mkdir(parents=True, exist_ok=True)
        (d / "gpu_id").write_text(f"{node.gpu_id}\n")
        (d / "name").write_text("gfx1100\n" if node.gpu_id else "\n")
        figures = {
            "cpu_cores_count": node.cpu_cores,
            "simd_count": node.simds,
            "drm_render_minor": node.render_minor,
            "local_mem_size": 0 if node.cpu_cores else 24 * GiB,
            "vendor_id": 4098 if node.gpu_id else 0,
        }
        (d / "properties").write_text("".join(f"{k} {figures.get(k, 0)}\n" for k in KFD_PROPERTIES))
    for pid, per_gpu in vram.items():
        d = kfd / "proc" / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        (d / "pasid").write_text("32770\n")
        for gpu_id, size in per_gpu.items():
            (d / f"vram_{gpu_id}").write_text(f"{size}\n")
            (d / f"sdma_{gpu_id}").write_text("0\n")
            (d / f"stats_{gpu_id}").mkdir(exist_ok=True)
            (d / f"stats_{gpu_id}" / "evicted_ms").write_text("0\n")
