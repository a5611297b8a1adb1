"""Frozen sample values: what one sampling pass saw.

Every field is fully populated when the value is built. "Not available" is
``None`` -- never 0, never a lazy attribute that would call NVML later.
Memory is in bytes (int), times are seconds since the epoch (float).

The agent's figures (``AgentReport`` and its parts) are declared in
core/agent_figures/agent_report.py and read through here like every other
sample name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vramscope.agent.protocol import JsonObject, StrEnum
from vramscope.core.agent_figures.agent_report import (
    AGENT_ENDED as AGENT_ENDED,
    ALL_BUCKETS as ALL_BUCKETS,
    BUCKET_LABELS as BUCKET_LABELS,
    BUCKET_NAMES as BUCKET_NAMES,
    SAMPLES_PER_REPORT as SAMPLES_PER_REPORT,
    AgentBuckets as AgentBuckets,
    AgentDevice as AgentDevice,
    AgentEvent as AgentEvent,
    AgentReport as AgentReport,
    AgentSamplePoint as AgentSamplePoint,
)
from vramscope.core.processes.slurm_jobs import SlurmJob

if TYPE_CHECKING:  # core/processes/servers.py imports this module; the stream codec resolves the name
    from vramscope.core.processes.servers import ServerState

# How a process looks from here (psutil's view of it).
VISIBLE = "ok"
ACCESS_DENIED = "access-denied"  # exists, but /proc details are not readable
EXITED = "exited"  # NVML lists it, but it has exited (or is a zombie)
NOT_VISIBLE = "not-visible"  # PID not in our namespace (container / other ns)
# The driver lists it, no /proc entry exists, and this monitor sees the host's PIDs:
# no such process exists on this machine (a "ghost" the driver still holds memory for).
GHOST = "no-such-process"


@dataclass(frozen=True, slots=True)
class Container:
    """The container a process lives in (see core/processes/containers.py for the layouts)."""

    runtime: str  # "docker", "podman", "containerd", "cri-o", "cri" (a pod), "lxc"
    id: str | None  # the full container id from the cgroup path; None where it has none (lxc)
    name: str | None = None  # from the runtime's API, where this user can read it
    pod_uid: str | None = None  # Kubernetes pod UID, where the path says so
    pod: str | None = None  # Kubernetes pod name / namespace, where the runtime says so
    namespace: str | None = None

    @property
    def short_id(self) -> str | None:
        return self.id[:12] if self.id else None

    @property
    def label(self) -> str:
        """'docker trainer', 'podman 3f2a9c1d0b7e', 'pod default/web'."""
        ref = self.name or self.short_id or "?"
        if self.pod is not None:
            where = f"{self.namespace}/{self.pod}" if self.namespace else self.pod
            return f"pod {where} ({ref})"
        if self.pod_uid is not None:
            return f"pod {self.pod_uid[:8]} {self.runtime} {ref}"
        return f"{self.runtime} {ref}"

    def as_dict(self) -> dict[str, str | None]:
        return {
            "runtime": self.runtime,
            "id": self.id,
            "name": self.name,
            "pod_uid": self.pod_uid,
            "pod": self.pod,
            "namespace": self.namespace,
        }


# A process is (pid, start time): a reused PID is a different process. An exact
# tuple, read by unpacking (``pid, start = ident``): identities are hashed and
# compared by the ten thousand per frame on a big box (set and dict keys), and
# the garbage collector untracks an exact tuple of atoms at its first collection
# (a tuple subclass such as a NamedTuple stays tracked for good: 16k more objects
# every full collection walks; CPython's gcmodule untrack_tuples).
ProcessIdentity = tuple[int, float | None]


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """What psutil could tell about a PID. Fields it could not read are None."""

    pid: int
    start_time: float | None = None
    user: str | None = None
    name: str | None = None
    cmdline: tuple[str, ...] | None = None
    ppid: int | None = None
    status: str | None = None  # psutil status string ("running", "sleeping", "zombie", ...)
    visibility: str = VISIBLE  # VISIBLE / ACCESS_DENIED / EXITED / NOT_VISIBLE / GHOST
    parent_alive: bool | None = None  # False: parent gone (re-parented to init / a subreaper)
    container: Container | None = None  # None: not in a container (or not readable)
    ns_pid: int | None = None  # its PID inside its own PID namespace, when that is not ours
    notebook: str | None = None  # a Jupyter kernel's notebook (JPY_SESSION_NAME), where readable
    slurm: SlurmJob | None = None  # its Slurm job (core/processes/slurm_jobs.py), None outside one

    @property
    def identity(self) -> ProcessIdentity:
        return (self.pid, self.start_time)

    @property
    def command(self) -> str | None:
        if self.cmdline:
            return " ".join(self.cmdline)
        return self.name


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """One process on one GPU in one pass."""

    pid: int
    used: int | None  # device memory in bytes; None = n/a (Windows/WSL, MIG, ...)
    kinds: tuple[str, ...] = ("compute",)  # subset of ("compute", "graphics")
    sm: int | None = None  # SM utilisation %, None when NVML gave no figure
    info: ProcessInfo | None = None
    has_agent: bool = False
    mig_uuid: str | None = None  # the MIG slice it runs on ("MIG-..."), None off MIG
    cpu_percent: float | None = None  # host CPU over the last pass, 100 = one core (as top shows it)
    host_memory: int | None = None  # resident set size in host RAM, bytes
    # pid + start time, made once (every detector asks for it, every pass; set by __post_init__)
    _identity: ProcessIdentity = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        start = self.info.start_time if self.info is not None else None
        object.__setattr__(self, "_identity", (self.pid, start))

    @property
    def identity(self) -> ProcessIdentity:
        return self._identity

    def with_figures(
        self, used: int | None, sm: int | None, cpu_percent: float | None, host_memory: int | None
    ) -> GpuProcess:
        """This process with new moving figures: what a stream delta changes for most
        of 16k processes each second, made without the dataclass __init__ (1.6 against 2.5 us)."""
        new, put = object.__new__(GpuProcess), object.__setattr__
        put(new, "pid", self.pid)
        put(new, "used", used)
        put(new, "kinds", self.kinds)
        put(new, "sm", sm)
        put(new, "info", self.info)
        put(new, "has_agent", self.has_agent)
        put(new, "mig_uuid", self.mig_uuid)
        put(new, "cpu_percent", cpu_percent)
        put(new, "host_memory", host_memory)
        put(new, "_identity", self._identity)
        return new


def bare_uuid(uuid: str | None) -> str | None:
    """NVML's "GPU-<uuid>" / "MIG-<uuid>" and torch's bare uuid, compared alike."""
    if not uuid:
        return None
    u = str(uuid).strip().lower()
    return u[4:] if u.startswith(("gpu-", "mig-")) else u


@dataclass(frozen=True, slots=True)
class MigSlice:
    """One MIG device (slice) of a MIG-enabled GPU, as NVML reports it.

    Its processes are also in the parent GpuSample's list (each tagged with
    ``mig_uuid``), so everything that walks GPUs sees them once.
    """

    index: int  # MIG device index under the parent (nvmlDeviceGetMigDeviceHandleByIndex)
    uuid: str | None = None  # "MIG-..."; what CUDA_VISIBLE_DEVICES names
    name: str | None = None
    profile: str | None = None  # "3g.40gb": compute slices g . memory
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    total: int | None = None
    used: int | None = None
    free: int | None = None
    processes: tuple[GpuProcess, ...] = ()
    error: str | None = None


# GPU vendors, as GpuSample.vendor names them (PCI vendor ids: the PCI-SIG list, pci.ids)
NVIDIA, AMD, INTEL = "NVIDIA", "AMD", "Intel"
UNIFIED_MEMORY = "unified"  # GpuSample.memory_kind of a board sharing system memory


@dataclass(frozen=True, slots=True)
class GpuSample:
    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    total: int | None = None
    used: int | None = None
    free: int | None = None
    reserved: int | None = None  # driver/system reserved (nvmlMemory_v2), None where v1 only
    util_gpu: int | None = None  # %
    util_memory: int | None = None  # %
    temperature: int | None = None  # degrees C
    power_w: float | None = None
    power_limit_w: float | None = None
    processes: tuple[GpuProcess, ...] = ()
    error: str | None = None  # None, or a short text ("GPU is lost", ...)
    mig_mode: bool | None = None  # None: the GPU cannot do MIG (or does not say)
    slices: tuple[MigSlice, ...] = ()  # MIG devices, when mig_mode is on
    asleep: bool = False  # runtime-suspended PCI device: not queried, so not woken
    host: str | None = None  # the machine it is in, when not this one (--host, a fleet)
    host_index: int | None = None  # its index on that machine (``index`` is unique here)
    vendor: str | None = None  # NVIDIA, AMD or INTEL; None: not known (an older recording)
    # "unified": the board has no memory of its own (GB10, Jetson, an APU) and total/used/
    # free are the system memory its processes share (sources/machine/unified.py); None: its own VRAM
    memory_kind: str | None = None
    # figures this GPU does not report and why: (("util_gpu", "the xe driver ..."), ...)
    not_reported: tuple[tuple[str, str], ...] = ()
    # True: its processes are still being read (the sampler's first look, sent before
    # its first pass has read them: core/stream/first_look.py) -- ``processes`` is
    # empty because they are not known yet, not because there are none
    processes_pending: bool = False

    @property
    def unified(self) -> bool:
        return self.memory_kind == UNIFIED_MEMORY

    def reason(self, figure: str) -> str | None:
        """Why ``figure`` (a field name, or "process_memory" / "process_sm") is n/a here."""
        return next((why for name, why in self.not_reported if name == figure), None)

    def slice_of(self, proc: GpuProcess) -> MigSlice | None:
        """The MIG slice a process of this GPU runs on (None off MIG)."""
        if proc.mig_uuid is None:
            return None
        return next((s for s in self.slices if s.uuid == proc.mig_uuid), None)

    def slice_view(self, mig: MigSlice) -> GpuSample:
        """A MIG slice seen as the GPU its processes get: the slice's memory and
        processes under this GPU's index (so it is named as the card is)."""
        return dataclasses.replace(
            self,
            name=mig.name or self.name,
            uuid=mig.uuid,
            total=mig.total,
            used=mig.used,
            free=mig.free,
            reserved=None,
            util_gpu=None,
            util_memory=None,
            processes=mig.processes,
            slices=(),
            mig_mode=None,
            error=mig.error or self.error,
        )

    @property
    def label(self) -> str:
        """ "GPU 0", or "HOST GPU 0" for a GPU of another machine."""
        return gpu_label(self.index, self.host, self.host_index)


def gpu_label(index: int, host: str | None = None, host_index: int | None = None) -> str:
    """How a GPU is named everywhere (cards, alerts, exports): "GPU 0" on this
    machine, "HOST GPU 0" (its own index there) on another one."""
    if host is None:
        return f"GPU {index}"
    return f"{host} GPU {index if host_index is None else host_index}"


@dataclass(frozen=True, slots=True)
class DeviceHolder:
    """A process holding /dev/nvidia* open that no GPU's NVML list names."""

    info: ProcessInfo
    devices: tuple[str, ...]  # "/dev/nvidia0", "/dev/nvidiactl", ...


class HostStatus(StrEnum):
    """How a machine a frame is put together from stands (sources/remote/host_stream.py)."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    DOWN = "down"
    NOT_INSTALLED = "not installed"


@dataclass(frozen=True, slots=True)
class HostState:
    """One machine a frame was put together from (--host, a fleet) and how it stands."""

    host: str
    state: str  # a HostStatus
    error: str | None = None
    retry_in: float | None = None  # seconds until the next attempt, while down
    version: str | None = None  # the vramscope version there
    gpus: int = 0
    # its diagnostics' alerts and watches, as core/detectors/alert.py writes them
    alerts: tuple[JsonObject, ...] = field(default=(), compare=False, hash=False)


# Sources whose frames come from other machines, agent reports included (the
# local agent client must not attach this machine's agents to their PIDs).
SSH_SOURCE = "ssh"  # `vramscope --host`: frames read from `vramscope stream` over ssh
PROMETHEUS_SOURCE = "prometheus"  # `--from-prometheus`: a fleet read from a Prometheus server
REMOTE_SOURCES = (SSH_SOURCE, PROMETHEUS_SOURCE)


@dataclass(frozen=True, slots=True)
class JupyterKernel:
    """A Jupyter kernel process on this machine, as its Jupyter server tells
    (sources/machine/jupyter_kernels.py asks, off the sampling thread; the squatter rule reads it)."""

    pid: int
    start_time: float | None
    connection_file: str | None = None
    last_activity: float | None = None  # its last execution (epoch s); None: no server said
    busy: bool = False  # executing now
    notebook: str | None = None  # the notebook that uses it
    how: str = ""  # how the notebook was found, or why it was not


@dataclass(frozen=True, slots=True)
class Frame:
    """Everything one sampling pass produced."""

    time: float
    gpus: tuple[GpuSample, ...] = ()
    source: str = "nvml"  # "nvml", "demo", "session", or one of REMOTE_SOURCES
    simulated: bool = False
    error: str | None = None  # source-level failure: "NVIDIA driver not found ..."
    driver_version: str | None = None
    nvml_version: str | None = None
    cuda_driver_version: str | None = None
    agents: tuple[AgentReport, ...] = ()  # see sources/agents/agent_client.py
    servers: tuple[ServerState, ...] = ()  # core/processes/servers.py, sources/machine/servers.py
    wsl: bool | None = None  # running under WSL 2 (no per-process memory); None: not known
    # True: this monitor sees the host's PIDs; False: it runs in its own PID namespace
    # (a container without --pid=host); None: not known (demo, session, other OS)
    host_pids: bool | None = None
    device_holders: tuple[DeviceHolder, ...] = ()
    # trouble after the previous frame that the window must show: a store
    # listener (recorder, diagnostics) that failed, a sampling pass that raised
    notices: tuple[str, ...] = ()
    hosts: tuple[HostState, ...] = ()  # the machines of a multi-host frame (else empty)
    kernels: tuple[JupyterKernel, ...] = ()  # this machine's Jupyter kernels on a GPU

    def all_processes(self) -> Iterator[tuple[GpuSample, GpuProcess]]:
        for gpu in self.gpus:
            for proc in gpu.processes:
                yield gpu, proc

    @property
    def host_names(self) -> tuple[str, ...]:
        """The other machines this frame shows (--host, a fleet, a recording of
        them), in order; empty for this machine's own GPUs."""
        if self.hosts:
            return tuple(h.host for h in self.hosts)
        return tuple(dict.fromkeys(g.host for g in self.gpus if g.host is not None))
