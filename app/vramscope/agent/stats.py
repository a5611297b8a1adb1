"""Allocator statistics per CUDA device, through an injectable provider.

``TorchCudaProvider`` reads ``torch.cuda.memory_stats`` -- no CUDA
synchronisation, and never on a device the process has not touched (the
agent must not create a CUDA context). Tests and benches pass a
``ReplayProvider`` (sources/demo/allocator_replay.py) that replays a recorded-looking
sequence instead.

The peak since the previous sample is exact: the agent resets the
allocator's peak counters at each of its full reads and keeps the user's
view of them unchanged (agent/user_peaks.py, after PyTorch's documented
``max_memory_allocated`` / ``reset_peak_memory_stats`` pair). Each
consumer's window (sample, step, OOM) is the highest of the stretches
between two reads since its own previous read. A provider that cannot reset
(a replay, a build without the raw functions) falls back to peak windows
that read the all-time counter: exact when it rose in the window, otherwise
a lower bound with the counter as upper bound (``peak_allocated_bound``).

A statistic the backend does not provide is ``None``, never 0: with
``backend:cudaMallocAsync`` only allocated/active/reserved (and their peaks)
are meaningful, the rest read as zeros there and are reported as None.
"""

from __future__ import annotations

import os
import threading

from vramscope.agent import user_peaks
from vramscope.agent.protocol import PEAK_BOUND, ItemKind
from vramscope.agent.user_peaks import PEAK_KEY

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


def default_provider(torch=None):
    """torch.cuda (CUDA or ROCm), or torch.xpu on a build for Intel GPUs only."""
    if torch is None:
        import torch
    version = getattr(torch, "version", None)
    xpu = getattr(torch, "xpu", None)
    if not (getattr(version, "cuda", None) or getattr(version, "hip", None)) and xpu is not None:
        try:
            if xpu.is_available():
                from vramscope.agent.stats_xpu import TorchXpuProvider

                return TorchXpuProvider(torch)
        except Exception:
            pass
    return TorchCudaProvider(torch)


def device_name(provider, index: int) -> str:
    """The agent's name for a provider's device: "cuda:<index>", unless the provider
    names its devices itself (a test provider that replays CUDA semantics with
    CPU tensors calls its device "cpu", where those tensors are)."""
    fn = getattr(provider, "device_name", None)
    return fn(index) if fn is not None else f"cuda:{index}"


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
        (agent/user_peaks.py). None where this build cannot (the caller reads
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
        """The allocator's segments without stack traces (agent/allocator_watch.py)."""
        fn = getattr(self._torch.cuda, "memory_snapshot", None)
        if fn is None:
            from vramscope.agent.segments import SnapshotUnavailable

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


def parse_alloc_conf(text: str | None) -> dict[str, str]:
    """'expandable_segments:True,max_split_size_mb:128' -> {'expandable_segments': 'True', ...}."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        key, sep, value = part.partition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _truthy(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in ("true", "1", "yes")


def read_allocator_settings(torch=None) -> dict:
    """expandable_segments, max_split_size (bytes, None = unlimited), backend, raw conf."""
    raw = None
    if torch is not None:
        getter = getattr(torch._C, "_accelerator_getAllocatorSettings", None)
        if getter is not None:
            try:
                raw = getter()
            except Exception:
                raw = None
    if not raw:
        raw = os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or ""
    conf = parse_alloc_conf(raw)
    backend = conf.get("backend")
    if torch is not None:
        try:
            backend = torch.cuda.get_allocator_backend()
        except Exception:
            pass
    split_mb = conf.get("max_split_size_mb")
    try:
        max_split = int(float(split_mb) * 1024 * 1024) if split_mb else None
    except ValueError:
        max_split = None
    return {
        "backend": backend or "native",
        "expandable_segments": _truthy(conf.get("expandable_segments")) or False,
        "max_split_size": max_split,  # None: unlimited (the default)
        "conf": raw,
    }


class PeakWindow:
    """Peak allocated since this window was last taken (see module doc), and whether
    that figure is the window's true peak.

    Between two looks at the allocator the all-time counter either rose -- then the
    new all-time peak happened between them: exact -- or it did not: that stretch's
    peak lies between the readings and the counter (``bound``). After a user's reset
    (the counter fell) the part before the reset is bounded by the old counter. The
    window is exact when its figure reaches every stretch's bound; otherwise the
    figure is a lower bound and ``bound`` the upper one."""

    __slots__ = ("_prev_global", "_max", "_bound")

    def __init__(self):
        self._prev_global: int | None = None
        self._max: int | None = None
        self._bound: int | None = None  # the highest upper bound of a stretch not known exactly

    def observe(self, current: int | None, global_peak: int | None) -> None:
        m = self._max
        if current is not None and (m is None or current > m):
            m = current
        if global_peak is not None:
            prev = self._prev_global
            if prev is None or global_peak != prev:  # rose (or was reset by the user) since our
                if m is None or global_peak > m:  # last look: the counter's peak is in this stretch
                    m = global_peak
            if prev is not None and global_peak <= prev:  # not risen: this stretch's peak (before
                if self._bound is None or prev > self._bound:  # a user's reset) is at most prev
                    self._bound = prev
            self._prev_global = global_peak
        self._max = m

    def point(self, current: int) -> None:
        """A reading of allocated between two looks (a hook's): raises the lower bound."""
        if self._max is None or current > self._max:
            self._max = current

    def take(self) -> tuple[int | None, int | None]:
        """(the window's peak -- exact when the bound is None --, the upper bound where
        it is only a lower bound); the next window starts now."""
        m, bound = self._max, self._bound
        self._max = self._bound = None
        if bound is not None and (m is None or bound <= m):
            bound = None
        return m, bound


def merge_peaks(known: tuple | None, peak: int | None, bound: int | None) -> tuple:
    """Two stretches' (peak, upper bound or None: exact) as one stretch's."""
    if known is None:
        return peak, bound
    peaks = [v for v in (known[0], peak) if v is not None]
    top = max(peaks) if peaks else None
    bounds = [v for v in (known[1], bound) if v is not None]
    upper = max(bounds) if bounds else None
    return top, (upper if upper is not None and (top is None or upper > top) else None)


def current_of(value) -> int:
    """A hook's reading of one device: bytes, or (bytes, the all-time peak)."""
    return value[0] if type(value) is tuple else value


def extract(stats: dict, backend: str | None) -> dict:
    """Our fields from one memory_stats() dict; None where not provided."""
    out = {}
    async_backend = backend == "cudaMallocAsync"
    for field, key in STAT_KEYS.items():
        value = stats.get(key)
        if value is None or (async_backend and field not in ASYNC_MEANINGFUL):
            out[field] = None
        else:
            out[field] = int(value)
    return out


class StatsReader:
    """Reads every touched device, feeding each consumer's peak window.

    ``read(consumer)`` returns {device_name: fields} with ``peak_allocated``
    since that consumer's previous read. ``try_read`` never waits: the
    training thread calls it and gets None when the agent thread is mid-read
    or when the rate limit says not yet.
    """

    def __init__(self, provider, consumers=("sample", "step", "oom"), min_gap: float = 0.2, clock=None):
        import time

        self.provider = provider
        self._consumers = tuple(consumers)
        self._windows: dict[str, dict[str, PeakWindow]] = {c: {} for c in self._consumers}
        # the windows the hooks' readings go into: the samples' (one per reading: the cost
        # is the training thread's)
        self._hook_windows = self._windows.get(ItemKind.SAMPLE, {})
        self._lock = threading.Lock()
        self._clock = clock or time.monotonic
        self.min_gap = min_gap
        self._last_read: float | None = None
        self.due_at = float("-inf")  # the reader's clock: when try_read reads again (rate limit)
        self._settings: dict | None = None
        self._settings_at = -1e9
        self.reads = 0
        # {device index: allocated bytes}: what the hooks read on the training thread every
        # step, unnamed (the agent thread names the devices when it builds the step item)
        self.raw_allocated = (
            getattr(provider, "allocated_peaks_now", None) or getattr(provider, "allocated_now", None) or dict
        )
        self._names: dict[int, str] = {}  # device index -> name
        self._take = getattr(provider, "take_stats", None)  # a full read that resets the peaks
        self.exact = False  # the windows are exact (the provider resets the peak counters)

    def settings(self) -> dict:
        now = self._clock()
        if self._settings is None or now - self._settings_at > 5.0:
            try:
                self._settings = self.provider.allocator_settings()
            except Exception:
                self._settings = {
                    "backend": None,
                    "expandable_segments": None,
                    "max_split_size": None,
                    "conf": None,
                }
            self._settings_at = now
        return self._settings

    def read(self, consumer: str) -> dict[str, dict]:
        with self._lock:
            return self._read_locked(consumer)

    def allocated_now(self) -> dict[str, int]:
        """{device: allocated bytes} -- the one cheap counter the hooks read."""
        return {self.name(index): current_of(value) for index, value in self.raw_allocated().items()}

    def allocated_noted(self) -> dict[int, int | tuple[int, int]]:
        """Training thread, at a phase hook: allocated per device index -- with the
        all-time peak, (bytes, peak), where the provider reads both at once -- and each
        reading goes into the sample's peak window (a lower bound; a rise of the counter
        since the window's last look is exact). Read and noted under the reader's lock,
        so a reading lands in the window it was taken in; never waits (the agent thread
        mid-read: the reading is returned, not noted). With exact windows a reading adds
        nothing to them: it is only returned."""
        if self.exact or not self._lock.acquire(blocking=False):
            return self.raw_allocated()
        try:
            values = self.raw_allocated()
            windows, names = self._hook_windows, self._names
            for index, value in values.items():
                window = windows.get(names.get(index) or self.name(index))
                if window is not None:
                    if type(value) is tuple:
                        window.observe(*value)
                    else:
                        window.point(value)
            return values
        finally:
            self._lock.release()

    def name(self, index: int) -> str:
        name = self._names.get(index)
        if name is None:
            name = self._names[index] = device_name(self.provider, index)
        return name

    def try_read(self, consumer: str, force: bool = False) -> dict[str, dict] | None:
        now = self._clock()
        if not force and now < self.due_at:
            return None
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._read_locked(consumer)
        finally:
            self._lock.release()

    def _read_locked(self, consumer: str) -> dict[str, dict]:
        self._last_read = self._clock()
        self.due_at = self._last_read + self.min_gap
        self.reads += 1
        backend = self.settings().get("backend")
        out: dict[str, dict] = {}
        take = self._take
        for index in self.provider.devices():
            stats = take(index) if take is not None else None
            exact = self.exact = stats is not None  # (the peak since the previous take)
            if not exact:
                stats = self.provider.memory_stats(index)
            if not stats or not any(stats.values()):
                continue  # an untouched device: nothing allocated ever
            name = device_name(self.provider, index)
            fields = extract(stats, backend)
            current = fields["allocated"]
            peak = stats.get(PEAK_KEY)
            for c in self._consumers:
                window = self._windows[c].get(name)
                if window is None:
                    window = self._windows[c][name] = PeakWindow()
                if exact:  # this stretch's peak, exactly: the window's is the highest of its stretches
                    window.point(max(current or 0, peak or 0))
                else:
                    window.observe(current, peak)
            fields["peak_allocated"], fields[PEAK_BOUND] = self._windows[consumer][name].take()
            info = self.provider.device_info(index)
            fields["uuid"] = info.get("uuid")
            fields["total"] = info.get("total")
            fields["runtime"] = info.get("runtime")  # "CUDA 12.4", "ROCm 6.2...", "XPU ..."
            if info.get("missing"):
                fields["missing"] = list(info["missing"])  # figures this backend does not give
            out[name] = fields
        return out
