"""The PyTorch agent's figures as the monitor holds them: one frozen
``AgentReport`` per agent process, its devices, their buckets and its events
(sources/agents/agent_client.py turns what it pulls into these values).

Part of the frozen sample vocabulary: ``core/samples.py`` re-exports every name
here and ``Frame.agents`` holds these reports, so the stream codec carries them
by their own fields. The agent's wire format lives in vramscope/agent/; producers
may add fields (with defaults); consumers (detectors, UI, recorder, status) read
them. "Not available" is None, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vramscope.agent.protocol import (
    AGENT_BUCKETS,
    BUCKETS,
    AllocatorSettings,
    Bucket,
    InputItem,
    JsonObject,
    ModelItem,
    ShardedItem,
)
from vramscope.core.agent_figures.allocator_summary import AllocatorSummary
from vramscope.core.agent_figures.module_figures import ModuleFigures

if TYPE_CHECKING:  # core/samples.py imports this module (Frame.agents)
    from vramscope.core.samples import ProcessIdentity

# the agent's buckets; ALL_BUCKETS adds outside_pytorch (the monitor's): one vocabulary,
# defined with the wire protocol
BUCKET_NAMES: tuple[str, ...] = tuple(str(b) for b in AGENT_BUCKETS)
ALL_BUCKETS: tuple[str, ...] = tuple(str(b) for b in BUCKETS)
AGENT_ENDED = "process ended"  # AgentReport.error once the agent's process is gone
BUCKET_LABELS = {  # the words the window, `vramscope status` and the alerts use for each bucket
    Bucket.WEIGHTS: "weights",
    Bucket.GRADIENTS: "gradients",
    Bucket.OPTIMIZER_STATE: "optimizer state",
    Bucket.OTHER_ALLOCATED: "activations + temporaries",
    Bucket.CACHED_FREE: "cached, free (reserved − allocated)",
    Bucket.OUTSIDE_PYTORCH: "outside PyTorch (context, NCCL, cuBLAS)",
}


@dataclass(frozen=True, slots=True)
class AgentBuckets:
    """Bytes per bucket on one device; None = no data (never 0 for unknown)."""

    weights: int | None = None
    gradients: int | None = None
    optimizer_state: int | None = None
    other_allocated: int | None = None  # activations + temporaries
    cached_free: int | None = None  # reserved - allocated
    outside_pytorch: int | None = None  # NVML process memory - reserved (added by the monitor)
    note: str | None = None  # why a bucket is None although its inputs were known

    def as_dict(self) -> dict[str, int | None]:
        """Every bucket the window shows, outside_pytorch included."""
        return {name: getattr(self, name) for name in ALL_BUCKETS}


@dataclass(frozen=True, slots=True)
class AgentDevice:
    device: str  # "cuda:0" (CUDA or ROCm), "xpu:0", "cpu"
    gpu_uuid: str | None = None  # to match the NVML GPU
    allocated: int | None = None
    reserved: int | None = None
    active: int | None = None
    inactive_split: int | None = None  # non-releasable
    requested: int | None = None
    peak_allocated: int | None = (
        None  # the peak over the frame's interval, every agent sample in it (a lower bound where:)
    )
    peak_allocated_bound: int | None = None  # its upper bound; None: peak_allocated is exact
    num_alloc_retries: int | None = None
    num_ooms: int | None = None
    alloc_count: int | None = None
    free_count: int | None = None
    buckets: AgentBuckets | None = None
    total: int | None = None  # device capacity as torch sees it
    runtime: str | None = None  # what torch runs on there: "CUDA 12.4", "ROCm 6.2.41133-...", "XPU"
    missing: tuple[str, ...] = ()  # allocator figures this backend does not give (XPU)


# samples one AgentReport carries: a frame's interval at the agent's fastest rate
# (agent.MIN_INTERVAL) for frames of up to 6 s; beyond that the oldest are left out, and the
# interval's peak (the report's AgentDevice.peak_allocated) still covers them
SAMPLES_PER_REPORT = 128


@dataclass(frozen=True, slots=True)
class AgentSamplePoint:
    """One of an agent's samples: its time and its devices' own figures."""

    time: float
    step: int | None = None
    devices: tuple[AgentDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentEvent:
    kind: str  # "step", "oom", "eval_autograd", "checkpointing_use_cache", ...
    time: float
    data: JsonObject = field(default_factory=lambda: JsonObject({}), compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class AgentReport:
    """The latest state of one agent process, as the monitor has it."""

    pid: int
    start_time: float | None
    hostname: str | None = None
    time: float | None = None  # agent's timestamp of the newest sample
    # every sample since the previous report, oldest first, each with its own figures (``devices``
    # holds the newest with the interval's peak and outside PyTorch; at most SAMPLES_PER_REPORT):
    # a sampler's subscribers draw and record every sample, not one a frame
    samples: tuple[AgentSamplePoint, ...] = field(default=(), compare=False, hash=False)
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    step: int | None = None
    devices: tuple[AgentDevice, ...] = ()
    allocator_settings: AllocatorSettings = field(default_factory=dict, compare=False, hash=False)
    events: tuple[AgentEvent, ...] = ()  # new since the previous frame
    connected: bool = True
    error: str | None = None
    recent_events: tuple[AgentEvent, ...] = ()  # the last notable (non-step) events, kept across frames
    dropped: bool = False  # the agent's ring evicted items before the monitor pulled them
    # per registered model (agent/tensors/model_info.py)
    models: tuple[ModelItem, ...] = field(default=(), compare=False, hash=False)
    phases_measured: float | None = None  # share of steps whose phases the agent read
    # per-module figures of the latest sampled step
    modules: tuple[ModuleFigures, ...] = field(default=(), compare=False, hash=False)
    # the training forward's input (agent/tensors/input_shape.py)
    measured_input: InputItem | None = field(default=None, compare=False, hash=False)
    rendezvous: str | None = None  # the distributed job's MASTER_ADDR:PORT (its ranks share it)
    # FSDP2's all-gathered copies and DDP's buckets per device (agent/tensors/sharded.py)
    sharded: ShardedItem | None = field(default=None, compare=False, hash=False)
    # the newest allocator summary (sources/agents/allocator_input.py); None: none received
    allocator: AllocatorSummary | None = field(default=None, compare=False, hash=False)

    @property
    def identity(self) -> ProcessIdentity:
        return (self.pid, self.start_time)

    @property
    def problem(self) -> str | None:
        """What went wrong with this agent (a protocol mismatch, a refused
        connection), None when nothing did: a process that simply ended is
        not a problem."""
        return self.error if self.error != AGENT_ENDED else None
