"""Allocator statistics per device, through an injectable provider: the reader.

The providers: ``TorchCudaProvider`` (agent/allocator/stats_cuda.py) reads ``torch.cuda.memory_stats`` -- no CUDA
synchronisation, and never on a device the process has not touched (the
agent must not create a CUDA context). Tests and benches pass a
``ReplayProvider`` (sources/demo/allocator_replay.py) that replays a recorded-looking
sequence instead.

The peak since the previous sample is exact: the agent resets the
allocator's peak counters at each of its full reads and keeps the user's
view of them unchanged (agent/allocator/user_peaks.py, after PyTorch's documented
``max_memory_allocated`` / ``reset_peak_memory_stats`` pair). Each
consumer's window (sample, step, OOM) is the highest of the stretches
between two reads since its own previous read. A provider that cannot reset
(a replay, a build without the raw functions) falls back to peak windows
that read the all-time counter: exact when it rose in the window, otherwise
a lower bound with the counter as upper bound (``peak_allocated_bound``).

The peak windows are agent/allocator/peak_window.py's, the fields agent/allocator/stat_fields.py's;
``TorchXpuProvider`` (agent/allocator/stats_xpu.py) reads Intel GPUs. A statistic the
backend does not provide is ``None``, never 0.
"""

from __future__ import annotations

import threading

from vramscope.agent.allocator.peak_window import PeakWindow, current_of
from vramscope.agent.protocol import PEAK_BOUND, ItemKind
from vramscope.agent.allocator.stat_fields import device_name, extract
from vramscope.agent.allocator.stats_cuda import TorchCudaProvider
from vramscope.agent.allocator.stats_xpu import TorchXpuProvider
from vramscope.agent.allocator.user_peaks import PEAK_KEY


def default_provider(torch=None):
    """torch.cuda (CUDA or ROCm), or torch.xpu on a build for Intel GPUs only."""
    if torch is None:
        import torch
    version = getattr(torch, "version", None)
    xpu = getattr(torch, "xpu", None)
    if not (getattr(version, "cuda", None) or getattr(version, "hip", None)) and xpu is not None:
        try:
            if xpu.is_available():
                return TorchXpuProvider(torch)
        except Exception:
            pass
    return TorchCudaProvider(torch)


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
