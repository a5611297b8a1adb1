"""torch.cuda's Python API over CUDA allocator semantics on CPU tensors.

``fake_cuda(monkeypatch)`` puts LiveBytes (tests/agent/live_bytes.py) behind
the raw functions every public reader of the caching allocator goes through
(``torch._C._cuda_memoryStats``, ``torch._C._cuda_resetPeakMemoryStats``)
and makes torch.cuda say one device is in use. The real
``torch.cuda.max_memory_allocated``, ``memory_stats``,
``reset_peak_memory_stats``... then run on a CPU build, and the agent's
``TorchCudaProvider`` reads them as it would on a GPU. The counter resets
like PyTorch's: the peak restarts at the current value. Each reset (the
agent's or the user's) closes a stretch whose true highest allocated is
recorded (``stretches``).
"""

from __future__ import annotations

import torch

from tests.agent.live_bytes import LiveBytes


class CountingLive(LiveBytes):
    """LiveBytes that knows the highest allocated since the last reset, never reset."""

    def __init__(self):
        super().__init__()
        self.since = 0  # the true highest allocated since the last reset of the counter
        self.high = 0  # the highest ever (reserved: a caching allocator keeps what it got)
        self.stretches: list[int] = []  # each closed stretch's true peak

    def track(self, t) -> None:
        super().track(t)
        allocated = self.allocated
        self.since = max(self.since, allocated)
        self.high = max(self.high, allocated)

    def nested(self, index: int) -> dict:
        allocated = self.allocated
        self.high = max(self.high, allocated)
        return {
            "allocated_bytes": {
                "all": {"current": allocated, "peak": max(self.peak, allocated), "allocated": 0, "freed": 0}
            },
            "reserved_bytes": {"all": {"current": self.high, "peak": self.high, "allocated": 0, "freed": 0}},
            "num_alloc_retries": 0,
            "num_ooms": 0,
            "num_device_alloc": 1,
            "num_device_free": 0,
        }

    def reset(self, index: int) -> None:
        self.stretches.append(max(self.since, self.peak))
        self.peak = self.since = self.allocated


def fake_cuda(monkeypatch, live: CountingLive) -> None:
    """torch.cuda (and its raw functions) over ``live``, one device, in use."""
    import torch.cuda.memory as memory

    monkeypatch.setattr(torch._C, "_cuda_memoryStats", live.nested, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_resetPeakMemoryStats", live.reset, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(memory, "is_initialized", lambda: True)
    monkeypatch.setattr(
        memory, "_get_device_index", lambda device=None, optional=False: 0 if device is None else int(device)
    )


def user_view() -> tuple:
    """Everything the user reads of the peaks, by every public name."""
    import torch.cuda.memory as memory

    return (
        torch.cuda.max_memory_allocated(),
        memory.max_memory_allocated(0),
        torch.cuda.memory_stats()["allocated_bytes.all.peak"],
        torch.cuda.memory_stats_as_nested_dict()["allocated_bytes"]["all"]["peak"],
        torch.cuda.max_memory_reserved(),
        torch.cuda.memory_allocated(),
    )
