"""Allocator statistics of Intel GPUs through ``torch.xpu`` (stdlib + torch only).

PyTorch's XPU backend keeps a caching allocator like CUDA's and offers
``torch.xpu.memory_stats`` with the same key names where it has the figure
(PyTorch docs, torch.xpu memory management). What a given build lacks is
reported as missing (``device_info()["missing"]``) and read as None, never 0;
the allocator snapshot (``memory_viz``) is CUDA's and ROCm's only.
"""

from __future__ import annotations

import os

from vramscope.agent.allocator import user_peaks
from vramscope.agent.allocator.stat_fields import STAT_KEYS
from vramscope.agent.allocator.user_peaks import PEAK_KEY


class TorchXpuProvider:
    """torch.xpu, read like torch.cuda: never on a device the process has not used."""

    def __init__(self, torch=None):
        if torch is None:
            import torch
        self._torch = torch
        self._info: dict[int, dict] = {}
        self.peaks = None  # UserPeaks once the agent resets the counters (agent/allocator/user_peaks.py)

    def devices(self) -> list[int]:
        xpu = self._torch.xpu
        try:
            initialized = getattr(xpu, "is_initialized", lambda: True)()
            if not xpu.is_available() or not initialized:
                return []
            return list(range(xpu.device_count()))
        except Exception:
            return []

    def device_name(self, index: int) -> str:
        return f"xpu:{index}"

    def memory_stats(self, index: int) -> dict:
        try:
            return dict(self._torch.xpu.memory_stats(index))
        except Exception:
            return {}

    def take_stats(self, index: int) -> dict | None:
        """The agent's full read, the peak counters reset after it, the user's view kept
        (as TorchCudaProvider.take_stats); None where this build cannot."""
        keeper = self.peaks
        if keeper is None:
            try:
                keeper = user_peaks.install(
                    self._torch,
                    "_xpu_memoryStats",
                    "_xpu_resetPeakMemoryStats",
                    user_peaks.accelerator_pair(self._torch, "xpu"),
                )
            except Exception:
                keeper = None
            keeper = self.peaks = keeper or False  # (False: this build cannot)
        if not keeper:
            return None
        try:
            return user_peaks.flatten(keeper.take(index))
        except Exception:
            return None

    def allocated_now(self) -> dict[int, int]:
        out = {}
        for index in self.devices():
            value = self.memory_stats(index).get(STAT_KEYS["allocated"])
            if value:
                out[index] = int(value)
        return out

    def device_info(self, index: int) -> dict:
        info = self._info.get(index)
        if info is not None and info["missing"] is not None:
            return info
        info = {"uuid": None, "total": None, "name": None, "runtime": "XPU", "missing": None}
        try:
            props = self._torch.xpu.get_device_properties(index)
            info["total"] = int(props.total_memory)
            info["name"] = str(props.name)
            driver = getattr(props, "driver_version", None)
            info["runtime"] = f"XPU (driver {driver})" if driver else "XPU"
        except Exception:
            pass
        stats = self.memory_stats(index)
        if stats:  # known once the allocator has figures
            keys = {**STAT_KEYS, "peak_allocated": PEAK_KEY}
            info["missing"] = tuple(f for f, k in keys.items() if k not in stats)
        self._info[index] = info
        return info

    def allocator_settings(self) -> dict:
        return {
            "backend": "native",
            "expandable_segments": None,
            "max_split_size": None,
            "conf": os.environ.get("PYTORCH_XPU_ALLOC_CONF") or None,
        }

    def snapshot(self, index: int | None = None) -> dict:
        return {"segments": [], "device_traces": []}  # no allocator snapshot on XPU

    def history_enabled(self) -> bool:
        return False
