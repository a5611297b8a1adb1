"""NVML source: one frozen Frame per pass, through nvidia-ml-py (``pynvml``).

Every NVML call goes through ``NvmlSource._call``, which turns an NVMLError
into ``None`` ("not available") and remembers the error per GPU, so no
failure escapes into the sampler:

- each GPU's own figures: memory (v2, v1 or a unified board's system pool),
  utilisation, temperature, power (sources/nvml/nvml_device.py);
- the compute and graphics process lists and per-process SM %, as frozen
  values reused while unchanged (sources/nvml/nvml_processes.py), read from
  pynvml's C entry points without its object per entry (sources/nvml/nvml_raw.py);
  MIG slices (sources/nvml/nvml_mig.py);
- a lost GPU is reported as such ("GPU is lost") while the others keep
  updating, and is read again on every pass, so it is picked up when it
  comes back;
- no library / no driver: ``Frame.error`` with a plain message; nvmlInit is
  retried at most every ``retry_interval`` seconds, so a driver that appears
  later is picked up without a restart.

Static facts (name, UUID, PCI bus id, versions) are read once per GPU, and
calls a GPU does not support are not repeated on later passes.

A GPU whose PCI device is runtime-suspended (``power/runtime_status`` =
``suspended`` in sysfs, the kernel's runtime PM; NVIDIA's "PCI-Express
Runtime D3 Power Management" driver chapter) is reported asleep and gets no
per-GPU NVML call until it wakes: a query would wake it and cost battery.
Its bus id is the one NVML gave before, or, for a GPU asleep since start,
the NVIDIA display devices in sysfs in bus order (NVML's own enumeration
order).

Processes that hold /dev/nvidia* open without being on any list are added
to the frame (sources/nvml/device_holders.py), scanned every few seconds.

The host side of a pass reads each listed process's /proc/<pid>/stat once
(sources/machine/proc_stat.py), for the process cache and the host CPU and memory
alike; a GPU whose figures are all the same as on the previous pass gives
the previous ``GpuSample`` again (frozen values: equal and unchanged).
"""

from __future__ import annotations

import logging

from vramscope.core.samples import NVIDIA, DeviceHolder, Frame, GpuSample
from vramscope.sources.nvml.device_holders import DeviceHolderScanner
from vramscope.sources.machine.host_usage import HostUsage
from vramscope.sources.nvml.nvml_errors import (
    DRIVER_NOT_LOADED,
    GPU_FATAL,
    LIBRARY_NOT_FOUND,
    PERMANENT,
    SESSION_LOST,
    GpuFailed,
)
from vramscope.sources.nvml.nvml_device import GpuState, read_device, sample_of
from vramscope.sources.nvml.nvml_mig import build_slices, read_mig
from vramscope.sources.nvml.nvml_processes import HostFigures, frozen_processes, read_processes, read_sm
from vramscope.sources.nvml.nvml_raw import RawReads
from vramscope.sources.machine.proc_stat import StatReader
from vramscope.sources.machine.processes import ProcessCache
from vramscope.sources.nvml.sysfs import SYS, is_nvidia, nvidia_bus_ids, runtime_suspended
from vramscope.sources.nvml.wsl import running_under_wsl

log = logging.getLogger(__name__)

NO_LIBRARY = "NVIDIA driver not found: libnvidia-ml.so.1 could not be loaded"
NO_DRIVER = "NVIDIA driver not loaded: NVML could not initialise ({})"
NO_PYNVML = "nvidia-ml-py (pynvml) is not installed"


class NvmlSource:
    name = "nvml"
    simulated = False

    def __init__(
        self,
        processes: ProcessCache | None = None,
        retry_interval: float = 3.0,
        sysfs_root: str = SYS,
        holders: DeviceHolderScanner | None = None,
        wsl: bool | None = None,
    ):
        self.processes = processes if processes is not None else ProcessCache()
        self.host_usage = HostUsage()
        self.stats = StatReader()  # one /proc/<pid>/stat read per process and pass
        self._host = HostFigures()  # pid -> (ProcessInfo, cpu %, host bytes) of the last pass
        self.retry_interval = float(retry_interval)
        self.sysfs_root = sysfs_root
        self.holders = holders if holders is not None else DeviceHolderScanner()
        self._nvidia_bus: dict[str, bool] = {}  # bus id -> an NVIDIA device in sysfs
        self._nvml = None
        self._raw: RawReads | None = None
        self._ready = False
        self._error: str | None = None
        # why there is no NVML, as a fact (callers never parse the error's words):
        self.not_installed = False  # no pynvml or no libnvidia-ml: no NVIDIA driver here
        self.no_driver = False  # that, or the driver is not loaded
        self._last_attempt: float | None = None
        self._gpus: dict[int, GpuState] = {}
        self._versions: tuple[str | None, str | None, str | None] = (None, None, None)
        self._proc_calls: dict[str, str | None] = {}  # kind -> pynvml function name
        self.init_attempts = 0
        # read once (it does not change while we run); tests pass it
        self.wsl = running_under_wsl() if wsl is None else wsl

    # -- public ------------------------------------------------------------------------
    @property
    def error(self) -> str | None:
        """Why NVML is not available (None while it is)."""
        return None if self._ready else self._error

    def gpu_errors(self, index: int) -> dict[str, str]:
        """The last NVML error per call for one GPU, as text (for diagnostics)."""
        gpu = self._gpus.get(index)
        if gpu is None:
            return {}
        return {call: self._error_text(code) for call, code in gpu.errors.items()}

    def sample(self, now: float) -> Frame:
        if not self._ready and not self._try_init(now):
            return Frame(time=now, source=self.name, error=self._error)
        nvml = self._nvml
        count = self._call(None, "count", nvml.nvmlDeviceGetCount)
        if count is None:
            if self._last_code in SESSION_LOST:
                self._lose_session(now)
                return Frame(time=now, source=self.name, error=self._error)
            return Frame(
                time=now,
                source=self.name,
                error=f"NVML could not count the GPUs: {self._error_text(self._last_code)}",
            )
        partial = [
            (gpu, asleep, {}, None) if asleep else (gpu, *self._sample_gpu(gpu, now))
            for gpu, asleep in self._each_gpu(count)
        ]

        # psutil enrichment: one lookup per distinct PID in this pass
        pids = set().union(*(procs for _g, _f, procs, _sm in partial))
        stats = self.stats.read_many(pids)
        infos = self.processes.lookup_many(pids, stats)
        held = {pid: devs for pid, devs in self.holders.holders().items() if pid not in pids}
        holders = tuple(
            DeviceHolder(info=self.processes.lookup(pid), devices=devs) for pid, devs in sorted(held.items())
        )
        self.processes.prune(pids | set(held))
        usage = self.host_usage.read(pids, stats)
        host = self._host
        host.update(pids, infos, usage)
        samples = []
        for gpu, figures, procs, sm in partial:
            if procs:
                figures["processes"] = frozen_processes(gpu, procs, sm, host)
            if gpu.slice_reads:
                figures["slices"] = build_slices(gpu.slice_reads, figures.get("processes", ()))
            samples.append(sample_of(gpu, figures))
        return self._frame(now, samples, host_pids=self.processes.host_pids, device_holders=holders)

    def sample_devices(self, now: float) -> Frame | None:
        """The GPUs' own figures, each marked ``processes_pending``, without a
        per-process call or a /proc read: what the stream sends before its first
        pass (core/stream/first_look.py). None while NVML gives no GPU."""
        if not self._ready and not self._try_init(now):
            return None
        count = self._call(None, "count", self._nvml.nvmlDeviceGetCount)
        if not count:
            return None
        gpus = []
        for gpu, asleep in self._each_gpu(count):
            figures = asleep or self._sample_gpu(gpu, now, devices_only=True)[0]
            gpus.append(GpuSample(**figures, processes_pending=True))
        return self._frame(now, gpus)

    def _frame(self, now: float, gpus, **more) -> Frame:
        driver, nvml_version, cuda = self._versions
        return Frame(
            time=now,
            gpus=tuple(gpus),
            source=self.name,
            driver_version=driver,
            nvml_version=nvml_version,
            cuda_driver_version=cuda,
            wsl=self.wsl,
            **more,
        )

    def _each_gpu(self, count: int):
        """(gpu, its fields if it is asleep -- else None) for each of ``count`` GPUs."""
        for index in list(self._gpus):
            if index >= count:
                del self._gpus[index]
        guessed = None
        for index in range(count):
            gpu = self._gpus.get(index)
            if gpu is None:
                gpu = self._gpus[index] = GpuState(index)
            bus = gpu.pci_bus_id
            if bus is None:
                if guessed is None:
                    guessed = nvidia_bus_ids(self.sysfs_root)
                bus = guessed[index] if len(guessed) == count else None
            if bus is not None and self._asleep(bus):
                gpu.slice_reads = []
                yield (
                    gpu,
                    dict(
                        index=index, name=gpu.name, uuid=gpu.uuid, pci_bus_id=bus, asleep=True, vendor=NVIDIA
                    ),
                )
            else:
                yield gpu, None

    def _asleep(self, bus: str) -> bool:
        nvidia = self._nvidia_bus.get(bus)
        if nvidia is None:
            nvidia = self._nvidia_bus[bus] = is_nvidia(bus, self.sysfs_root)
        return nvidia and runtime_suspended(bus, self.sysfs_root)

    def close(self) -> None:
        self.stats.close()
        if self._ready:
            self._call(None, "shutdown", self._nvml.nvmlShutdown)
            self._ready = False
            self._error = "closed"

    # -- init ---------------------------------------------------------------------------
    def _try_init(self, now: float) -> bool:
        last = self._last_attempt
        if last is not None and last <= now < last + self.retry_interval:
            return False
        self._last_attempt = now
        self.init_attempts += 1
        if self._nvml is None:
            try:
                import pynvml
            except ImportError:
                self._error = NO_PYNVML
                self.not_installed = self.no_driver = True
                return False
            self._nvml = pynvml
            self._raw = RawReads(pynvml)  # the process lists and samples without pynvml's objects
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            code = exc.value
            if code == LIBRARY_NOT_FOUND:
                self._error = NO_LIBRARY
                self.not_installed = self.no_driver = True
            elif code == DRIVER_NOT_LOADED:
                self._error = NO_DRIVER.format("Driver Not Loaded")
                self.no_driver = True
            else:
                self._error = f"NVML could not initialise: {self._error_text(code)}"
                self.not_installed = self.no_driver = False
            return False
        except OSError as exc:  # pragma: no cover - a broken library file
            self._error = f"{NO_LIBRARY} ({exc})"
            self.no_driver = True
            return False
        self._ready = True
        self._error = None
        self.not_installed = self.no_driver = False
        self._gpus.clear()
        self._proc_calls.clear()
        driver = self._call(None, "driver_version", nvml.nvmlSystemGetDriverVersion)
        nvml_version = self._call(None, "nvml_version", nvml.nvmlSystemGetNVMLVersion)
        cuda = self._call(None, "cuda_version", nvml.nvmlSystemGetCudaDriverVersion)
        cuda_text = None if cuda is None else f"{cuda // 1000}.{cuda % 1000 // 10}"
        self._versions = (driver, nvml_version, cuda_text)
        return True

    def _lose_session(self, now: float) -> None:
        """NVML says it is not initialised any more (driver unloaded)."""
        self._ready = False
        self._error = NO_DRIVER.format(self._error_text(self._last_code))
        self.no_driver = True
        self._last_attempt = now
        self._gpus.clear()

    # -- the one wrapper ---------------------------------------------------------------
    _last_code: int | None = None

    def _call(self, gpu: GpuState | None, what: str, fn, *args, **kwargs):
        """Call NVML; an NVMLError becomes None and is remembered (per GPU)."""
        try:
            value = fn(*args, **kwargs)
        except self._nvml.NVMLError as exc:
            code = exc.value
            self._last_code = code
            if gpu is not None:
                gpu.errors[what] = code
                if code in PERMANENT:
                    gpu.skip.add(what)
            return None
        self._last_code = None
        return value

    def _error_text(self, code: int | None) -> str:
        if code is None:
            return "unknown error"
        try:
            return str(self._nvml.NVMLError(code))
        except Exception:  # noqa: BLE001 - a message must not fail
            return f"NVML error {code}"

    def _gpu_call(self, gpu: GpuState, what: str, fn, *args, **kwargs):
        """One optional per-GPU figure: None where unsupported; a fatal error
        (lost GPU) aborts this GPU's pass."""
        if what in gpu.skip:
            return None
        value = self._call(gpu, what, fn, *args, **kwargs)
        if value is None:
            self._check_fatal(gpu)
        return value

    def _check_fatal(self, gpu: GpuState) -> None:
        """After a failed call: a lost GPU aborts this GPU's pass."""
        if self._last_code in GPU_FATAL:
            raise GpuFailed(self._last_code)

    # -- one GPU --------------------------------------------------------------------
    def _sample_gpu(self, gpu: GpuState, now: float, devices_only: bool = False):
        """-> (the GpuSample's fields but its processes and slices, {pid: [used, kinds, mig uuid]},
        {pid: SM %} or None); ``devices_only``: the fields alone (no process, MIG or SM call)."""
        try:
            return (read_device(self, gpu), {}, None) if devices_only else self._read_gpu(gpu, now)
        except GpuFailed as failed:
            gpu.slice_reads = []
            if not gpu.failed:
                log.warning("GPU %d: %s", gpu.index, self._error_text(failed.code))
            gpu.failed = True
            return (
                dict(
                    index=gpu.index,
                    name=gpu.name,
                    uuid=gpu.uuid,
                    pci_bus_id=gpu.pci_bus_id,
                    error=self._error_text(failed.code),
                    vendor=NVIDIA,
                ),
                {},
                None,
            )

    def _read_gpu(self, gpu: GpuState, now: float):
        figures = read_device(self, gpu)
        procs = read_processes(self, gpu, gpu.handle)
        figures["mig_mode"], gpu.slice_reads = read_mig(self, gpu, gpu.handle, procs)
        sm = read_sm(self, gpu, gpu.handle, procs)
        gpu.failed = False
        return figures, procs, sm
