"""Our names for the allocator's figures, read from a ``memory_stats()`` dict.

``torch.cuda.memory_stats`` and ``torch.xpu.memory_stats`` share the key
names (PyTorch docs, "torch.cuda.memory_stats"); both providers
(agent/allocator/stats_cuda.py, agent/allocator/stats_xpu.py) and the reader (agent/allocator/stats.py)
read them through ``STAT_KEYS``. A statistic the backend does not provide is
``None``, never 0: with ``backend:cudaMallocAsync`` only allocated/active/
reserved (and their peaks) are meaningful.
"""

from __future__ import annotations

# our field -> key of torch.cuda.memory_stats()
STAT_KEYS = {
    "allocated": "allocated_bytes.all.current",
    "reserved": "reserved_bytes.all.current",
    "active": "active_bytes.all.current",
    "inactive_split": "inactive_split_bytes.all.current",
    "requested": "requested_bytes.all.current",
    "num_alloc_retries": "num_alloc_retries",
    "num_ooms": "num_ooms",
    "alloc_count": "num_device_alloc",  # cudaMalloc calls (device allocations)
    "free_count": "num_device_free",  # cudaFree calls
}
ASYNC_MEANINGFUL = {"allocated", "reserved", "active"}


def device_name(provider, index: int) -> str:
    """The agent's name for a provider's device: "cuda:<index>", unless the provider
    names its devices itself (a test provider that replays CUDA semantics with
    CPU tensors calls its device "cpu", where those tensors are)."""
    fn = getattr(provider, "device_name", None)
    return fn(index) if fn is not None else f"cuda:{index}"


def extract(stats: dict, backend: str | None) -> dict:
    """Our fields from one memory_stats() dict; None where not provided."""
    out: dict[str, int | None] = {}
    async_backend = backend == "cudaMallocAsync"
    for field, key in STAT_KEYS.items():
        value = stats.get(key)
        if value is None or (async_backend and field not in ASYNC_MEANINGFUL):
            out[field] = None
        else:
            out[field] = int(value)
    return out
