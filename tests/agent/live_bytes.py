"""CUDA allocator semantics with CPU tensors: a provider whose "allocated" is
exactly the bytes of the storages alive at this instant.

``LiveBytes`` is a TorchDispatchMode: every operator's output storage is
noted with a finaliser, so the count goes down the moment the storage is
freed -- whether its last owner was a Python tensor, an autograd node holding
an activation for backward, or the optimizer's state. That is what
``torch.cuda.memory_allocated()`` reports on a GPU (minus rounding to the
allocator's block sizes). Tensors must be made inside the mode (model and
optimizer included) to be counted. The device is named "cpu", where the
tensors are, so the agent's buckets and this allocator describe one device.
"""

from __future__ import annotations

import json
import time
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from vramscope.sources.demo.allocator_replay import memory_stats_dict


def unique_bytes(tensors, device_type: str | None = None) -> int:
    """Bytes of the distinct storages behind ``tensors`` (None and other devices skipped):
    the tests' own count of what a bucket should hold."""
    seen, total = set(), 0
    for t in tensors:
        if t is None or (device_type is not None and t.device.type != device_type):
            continue
        s = t.untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


class LiveBytes(TorchDispatchMode):
    """No Python code runs when a storage dies (the weak reference's callback is a
    builtin ``dict.pop``): a finaliser written in Python could hand the GIL to
    another thread in the middle of PyTorch freeing a tensor, which no real
    allocator does."""

    def __init__(self):
        super().__init__()
        self._live: dict = {}  # weakref to a storage -> nbytes (the ref's callback removes it)
        self._ptrs: dict[int, weakref.ref] = {}  # data_ptr -> its weakref, to count a storage once
        self.peak = 0

    def track(self, t) -> None:
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            return
        storage = t.untyped_storage()
        ptr, nbytes = storage.data_ptr(), storage.nbytes()
        if not nbytes:
            return
        known = self._ptrs.get(ptr)
        if known is not None and known() is not None:
            return
        ref = weakref.ref(storage, self._live.pop)
        hash(ref)  # hashed while alive, so the callback can find it
        self._live[ref] = nbytes
        self._ptrs[ptr] = ref
        self.peak = max(self.peak, self.allocated)

    @property
    def allocated(self) -> int:
        return sum(list(self._live.values()))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            self.track(t)
        return out


class LiveBytesProvider:
    """The agent's allocator-statistics provider over a LiveBytes mode (device "cpu")."""

    def __init__(self, live: LiveBytes, info: dict | None = None):
        self.live = live
        self.info = info or {"uuid": None, "total": None, "name": "live CPU bytes"}

    def devices(self) -> list[int]:
        return [0]

    def device_name(self, index: int) -> str:
        return "cpu"

    def memory_stats(self, index: int) -> dict:
        allocated = self.live.allocated
        return memory_stats_dict(allocated, max(allocated, self.live.peak), peak=self.live.peak)

    def allocated_now(self) -> dict[int, int]:
        return {0: self.live.allocated}

    def allocated_peaks_now(self) -> dict[int, tuple[int, int]]:
        """(allocated, the all-time peak), as the real provider reads them at a hook."""
        allocated = self.live.allocated
        return {0: (allocated, max(allocated, self.live.peak))}

    def device_info(self, index: int) -> dict:
        return dict(self.info)

    def allocator_settings(self) -> dict:
        return {"backend": "native", "expandable_segments": False, "max_split_size": None, "conf": ""}

    def snapshot(self, index=None) -> dict:
        return {"segments": [], "device_traces": []}

    def history_enabled(self) -> bool:
        return False


def agent_thread_sample(agent, timeout: float = 5.0) -> dict:
    """The first sample the agent thread takes on its own from now on (an agent with a
    short interval): what the monitor sees between training hooks."""
    t0 = time.time()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for raw in reversed(agent.ring.all_items()):
            item = json.loads(raw)
            if item["kind"] == "sample" and item["t"] > t0 and item["agent"]["taken_by"] == "agent thread":
                return item
        time.sleep(0.01)
    raise AssertionError("the agent thread took no sample of its own")
