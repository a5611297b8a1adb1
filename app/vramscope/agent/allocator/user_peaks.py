"""The allocator's peak counters reset per window by the agent, unchanged for the user.

PyTorch documents the per-interval peak as a pair of calls:
``torch.cuda.max_memory_allocated`` "returns the peak allocated memory since
the beginning of this program. ``reset_peak_memory_stats()`` can be used to
reset the starting point in tracking this metric. For example, these two
functions can measure the peak allocated memory usage of each iteration in a
training loop" (pytorch.org/docs/stable/generated/torch.cuda.max_memory_allocated.html;
``reset_peak_memory_stats`` resets "the 'peak' key in each individual stat
dict" of ``memory_stats``). There is no other per-interval peak, so the agent
resets the counters at each of its allocator reads: the peak read before a
reset is exactly the highest value since the previous reset.

The counters are the user's too. So the agent keeps, per device, the highest
value each "peak" entry had before its resets (since the user's own last
reset), and the raw functions every public reader goes through are wrapped
to report the higher of that and the live counter: ``torch._C._cuda_memoryStats``
(behind ``torch.cuda.memory_stats``, ``memory_stats_as_nested_dict``,
``max_memory_allocated``, ``max_memory_reserved``, ``memory_summary`` and
their ``torch.cuda.memory`` aliases), ``torch._C._accelerator_getDeviceStats``
(``torch.accelerator.*``, on a CUDA build) and the XPU ones. A user's reset
(``torch.cuda.reset_peak_memory_stats``, ``reset_max_memory_allocated``, the
accelerator's) clears the kept values, and the part of the agent's window
before it is carried into the agent's next read. User code reads exactly
what it would read without the agent.

Limit: a reset is not atomic with the read before it; a new peak made by
another thread in the microseconds between the two (autograd's device
threads run without the GIL) is lost to the agent's window (the user's view
still has it: the kept value is taken from that same read, the live counter
restarts at the current value).
"""

from __future__ import annotations

import threading

PEAK = "peak"
ALLOCATED = ("allocated_bytes", "all")  # the nested path of the allocated counter
PEAK_KEY = "allocated_bytes.all.peak"  # (the flat key, as torch.cuda.memory_stats names it)


def _peaks(nested: dict) -> list[tuple[str, str, int]]:
    """(stat, pool, peak) of a nested stats dict ({"allocated_bytes": {"all": {...}}})."""
    out = []
    for stat, pools in nested.items():
        if type(pools) is dict:
            for pool, metrics in pools.items():
                if type(metrics) is dict and PEAK in metrics:
                    out.append((stat, pool, metrics[PEAK]))
    return out


def flatten(nested: dict) -> dict:
    """torch.cuda.memory_stats's flat form of a nested stats dict."""
    out = {}
    for key, value in nested.items():
        if type(value) is dict:
            for inner, sub in flatten(value).items():
                out[f"{key}.{inner}"] = sub
        else:
            out[key] = value
    return out


class UserPeaks:
    """One backend's raw stats/reset pair (device index -> nested dict; device index ->
    None), shared by the agent's reads and the user's wrapped ones."""

    def __init__(self, raw_stats, raw_reset):
        self.raw_stats = raw_stats
        self.raw_reset = raw_reset
        self._lock = threading.Lock()
        self._kept: dict[int, dict[tuple[str, str], int]] = {}  # device -> (stat, pool) -> peak
        self.kept_allocated: dict[int, int] = {}  # device -> kept allocated peak (the hooks' fast path)
        self._carry: dict[int, int] = {}  # device -> allocated peak before a user's reset in the window

    # -- the agent -------------------------------------------------------------------------
    def take(self, index: int) -> dict:
        """The agent's read: the raw nested stats, their allocated peak the highest since
        the previous take; then the counters reset (the user's view kept)."""
        with self._lock:
            nested = self.raw_stats(index)
            if not nested:
                return nested
            kept = self._kept.setdefault(index, {})
            for stat, pool, value in _peaks(nested):
                if value > kept.get((stat, pool), -1):
                    kept[(stat, pool)] = value
            self.kept_allocated[index] = kept.get(ALLOCATED, 0)
            self.raw_reset(index)
            carry = self._carry.pop(index, None)
        alloc = nested.get(ALLOCATED[0], {}).get(ALLOCATED[1])
        if carry is not None and alloc is not None and carry > alloc.get(PEAK, 0):
            alloc[PEAK] = carry
        return nested

    def allocated_peak(self, index: int) -> tuple[int, int] | None:
        """(allocated, the peak the user would read) from one raw read: the hooks'."""
        nested = self.raw_stats(index)
        try:
            d = nested["allocated_bytes"]["all"]
        except (KeyError, TypeError):
            return None
        peak, kept = d[PEAK], self.kept_allocated.get(index, 0)  # (read after the raw read)
        return int(d["current"]), int(peak if peak > kept else kept)

    # -- the user's view -------------------------------------------------------------------
    def user_stats(self, index: int, raw=None) -> dict:
        nested = (raw or self.raw_stats)(index)
        kept = self._kept.get(index)
        if kept and nested:
            for (stat, pool), value in list(kept.items()):
                metrics = nested.get(stat, {}).get(pool)
                if metrics is not None and value > metrics.get(PEAK, value):
                    metrics[PEAK] = value
        return nested

    def user_reset(self, index: int) -> None:
        with self._lock:
            nested = self.raw_stats(index)
            alloc = (nested or {}).get(ALLOCATED[0], {}).get(ALLOCATED[1]) or {}
            if PEAK in alloc:  # the agent's window keeps what came before the user's reset
                self._carry[index] = max(self._carry.get(index, 0), alloc[PEAK])
            self._kept.pop(index, None)
            self.kept_allocated.pop(index, None)
            self.raw_reset(index)


def accelerator_pair(torch, device_type: str) -> tuple[str, str] | None:
    """torch.accelerator's raw (stats, reset) names where the current accelerator is
    ``device_type`` (the same counters as that backend's own functions)."""
    acc = getattr(torch, "accelerator", None)
    try:
        current = acc.current_accelerator() if acc is not None else None
    except Exception:
        current = None
    if current is None or getattr(current, "type", None) != device_type:
        return None
    return "_accelerator_getDeviceStats", "_accelerator_resetPeakStats"


_install_lock = threading.Lock()


def install(torch, stats_name: str, reset_name: str, also: tuple[str, str] | None = None) -> UserPeaks | None:
    """Wrap ``torch._C.<stats_name>`` / ``<reset_name>`` (once: a wrapped function keeps
    its keeper) and return the keeper; ``also``: another (stats, reset) pair over the
    same counters (the accelerator API on a CUDA build). None where the build lacks them."""
    c = torch._C
    with _install_lock:
        raw_stats, raw_reset = getattr(c, stats_name, None), getattr(c, reset_name, None)
        keeper = getattr(raw_stats, "keeper", None)
        if isinstance(keeper, UserPeaks):
            return keeper
        if not callable(raw_stats) or not callable(raw_reset):
            return None
        keeper = UserPeaks(raw_stats, raw_reset)
        pairs = [(stats_name, reset_name)]
        if (
            also is not None
            and callable(getattr(c, also[0], None))
            and callable(getattr(c, also[1], None))
            and not isinstance(getattr(getattr(c, also[0]), "keeper", None), UserPeaks)
        ):
            pairs.append(also)
        for s, r in pairs:
            setattr(c, s, _stats_wrapper(keeper, getattr(c, s)))
            setattr(c, r, _reset_wrapper(keeper, getattr(c, r)))
        return keeper


def _stats_wrapper(keeper: UserPeaks, raw):
    def stats(device, *args, **kwargs):
        if args or kwargs or type(device) is not int:  # (a form the agent does not know: as is)
            return raw(device, *args, **kwargs)
        return keeper.user_stats(device, raw)

    stats.__wrapped__ = raw
    stats.__doc__ = raw.__doc__
    stats.keeper = keeper
    return stats


def _reset_wrapper(keeper: UserPeaks, raw):
    def reset(device, *args, **kwargs):
        if args or kwargs or type(device) is not int:
            return raw(device, *args, **kwargs)
        return keeper.user_reset(device)

    reset.__wrapped__ = raw
    reset.__doc__ = raw.__doc__
    return reset
