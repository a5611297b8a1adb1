"""Allocator statistics of CUDA (and ROCm's HIP) devices through ``torch.cuda``.

Read without synchronising, and never on a device the process has not
touched (the agent must not create a CUDA context). The peak counters are
reset at the agent's full reads with the user's view of them kept
(agent/allocator/user_peaks.py).
"""

from __future__ import annotations

from vramscope.agent.allocator import user_peaks
from vramscope.agent.allocator.allocator_settings import read_allocator_settings


def runtime_of(torch) -> str:
    """What torch.cuda runs on: "ROCm 6.2.41133-dd7f95766" on a ROCm build (there
    ``torch.version.hip`` is set and torch.cuda is HIP: PyTorch's "HIP (ROCm)
    semantics" notes), else "CUDA 12.4"."""
    version = getattr(torch, "version", None)
    hip = getattr(version, "hip", None)
    if hip:
        return f"ROCm {hip}"
    cuda = getattr(version, "cuda", None)
    return f"CUDA {cuda}" if cuda else "CUDA"


class TorchCudaProvider:
    """The real thing: torch.cuda (CUDA or ROCm's HIP), read without synchronising.
    ``torch``: the module (tests pass one shaped like a ROCm build)."""

    def __init__(self, torch=None):
        if torch is None:
            import torch
        self._torch = torch
        self._info: dict[int, dict] = {}
        self._touched: set[int] = set()
        self.peaks = None  # UserPeaks once the agent resets the counters (its first full read); False: cannot

    def devices(self) -> list[int]:
        """Indices of CUDA devices this process has allocated on (never initialises CUDA)."""
        cuda = self._torch.cuda
        try:
            if not cuda.is_available() or not cuda.is_initialized():
                return []
            return list(range(cuda.device_count()))
        except Exception:
            return []

    def memory_stats(self, index: int) -> dict:
        return self._torch.cuda.memory_stats(index)

    def take_stats(self, index: int) -> dict | None:
        """The agent's full read: the stats, their allocated peak the highest since the
        previous take, the peak counters then reset -- the user's view kept
        (agent/allocator/user_peaks.py). None where this build cannot (the caller reads
        ``memory_stats`` and bounds the peak instead)."""
        keeper = self.peaks
        if keeper is None:
            keeper = self.peaks = _cuda_keeper(self._torch) or False  # (False: this build cannot)
        if not keeper:
            return None
        return user_peaks.flatten(keeper.take(index))

    def allocated_now(self) -> dict[int, int]:
        """Allocated bytes per touched device: the allocator's counter, read from the
        nested stats (no flattening of ~150 keys, no synchronisation, no reset)."""
        cuda = self._torch.cuda
        out = {}
        for index in self.devices():
            value = cuda.memory_stats_as_nested_dict(index)["allocated_bytes"]["all"]["current"]
            if value or index in self._touched:
                self._touched.add(index)
                out[index] = int(value)
        return out

    def allocated_peaks_now(self) -> dict[int, tuple[int, int]]:
        """(allocated, the all-time peak) per touched device: one nested read each, as
        ``allocated_now`` (the peak costs nothing more; it is read, never reset)."""
        keeper = self.peaks
        if keeper:  # the raw counters, and the peak as the user's view has it
            out = {}
            for index in self.devices():
                pair = keeper.allocated_peak(index)
                if pair is not None and (pair[0] or index in self._touched):
                    self._touched.add(index)
                    out[index] = pair
            return out
        cuda = self._torch.cuda
        out = {}
        for index in self.devices():
            d = cuda.memory_stats_as_nested_dict(index)["allocated_bytes"]["all"]
            value = d["current"]
            if value or index in self._touched:
                self._touched.add(index)
                out[index] = (int(value), int(d["peak"]))
        return out

    def device_info(self, index: int) -> dict:
        info = self._info.get(index)
        if info is None:
            info = {"uuid": None, "total": None, "name": None, "runtime": runtime_of(self._torch)}
            try:
                props = self._torch.cuda.get_device_properties(index)
                info["total"] = int(props.total_memory)
                info["name"] = str(props.name)
                uuid = getattr(props, "uuid", None)
                info["uuid"] = str(uuid) if uuid is not None else None
            except Exception:
                pass
            self._info[index] = info
        return info

    def allocator_settings(self) -> dict:
        return read_allocator_settings(self._torch)

    def snapshot(self, index: int | None = None) -> dict:
        return self._torch.cuda.memory._snapshot(index)

    def segments(self) -> list:
        """The allocator's segments without stack traces (agent/allocator/allocator_watch.py)."""
        fn = getattr(self._torch.cuda, "memory_snapshot", None)
        if fn is None:
            from vramscope.agent.allocator.segments import SnapshotUnavailable

            raise SnapshotUnavailable("this torch has no torch.cuda.memory_snapshot")
        try:
            return fn(include_traces=False)
        except TypeError:  # older torch: no include_traces (no traces while history is off)
            return fn()

    def history_enabled(self) -> bool:
        fn = getattr(self._torch._C, "_cuda_isHistoryEnabled", None)
        try:
            return bool(fn()) if fn is not None else False
        except Exception:
            return False


def _cuda_keeper(torch):
    """torch._C's CUDA stats/reset pair wrapped once per process (and the accelerator
    API's where the accelerator is CUDA); None where the build lacks them."""
    try:
        also = user_peaks.accelerator_pair(torch, "cuda")
        return user_peaks.install(torch, "_cuda_memoryStats", "_cuda_resetPeakMemoryStats", also)
    except Exception:
        return None
