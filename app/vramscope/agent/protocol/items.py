"""The shapes of what the agent sends (``TypedDict``s of JSON objects): the monitor checks
every field (sources/agents/agent_input.py) and decodes each item once into a frozen
value. A new item kind: a TypedDict here, an ItemKind or EventKind member
(agent/protocol/names.py), and a decoder in sources/agents/agent_input.py returning a
frozen dataclass. Standard library only.
"""

from __future__ import annotations

from typing import NewType, TypedDict

from vramscope.agent.protocol.names import StrEnum

# A JSON object whose shape varies on purpose (an event's data by its kind, an
# optimizer's settings, the agent's own figures, an alert): the monitor checks it
# within the wire's bounds (finite numbers, bounded text, lists and depth) and
# reads it key by key with a type check. Every other value has a declared type.
JsonObject = NewType("JsonObject", dict[str, object])

# the allocator's configuration (PYTORCH_CUDA_ALLOC_CONF, parsed): option -> value
AllocatorSetting = str | int | float | bool | None
AllocatorSettings = dict[str, AllocatorSetting]


class HelloReply(TypedDict, total=False):
    """The answer to ``hello`` (also a final dump's "hello"): who this agent is."""

    ok: bool
    op: str  # Op.HELLO
    pid: int
    start_ticks: int | None  # /proc/PID/stat field 22
    start_time: float | None  # seconds since the epoch
    hostname: str | None
    pid_namespace: str | None
    rank: int | None
    local_rank: int | None
    world_size: int | None
    rendezvous: str | None  # the job's MASTER_ADDR:PORT (its ranks share it)
    protocol: int
    supported: list[int]  # the protocol versions it reads and answers in
    agent_version: int
    interval: float
    oldest: int | None  # the ring's oldest item (None: empty)
    latest: int  # the newest item's seq


# the allocator's counters a device entry carries (DeviceFigures), in the order
# sessions store them (core/session/schema.py AGENT_COLUMNS)
ALLOCATOR_FIGURES = (
    "allocated",
    "reserved",
    "active",
    "inactive_split",
    "requested",
    "peak_allocated",
    "num_alloc_retries",
    "num_ooms",
    "alloc_count",
    "free_count",
)


class DeviceFigures(TypedDict, total=False):
    """One device of a sample: the allocator's figures (agent/allocator/stats.py) and the buckets."""

    device: str  # "cuda:0", "cpu", "xpu:0"
    uuid: str | None
    name: str | None
    total: int | None
    runtime: str | None
    allocated: int | None
    reserved: int | None
    active: int | None
    inactive_split: int | None
    requested: int | None
    peak_allocated: int | None
    peak_allocated_bound: int | None  # PEAK_BOUND
    num_alloc_retries: int | None
    num_ooms: int | None
    alloc_count: int | None
    free_count: int | None
    missing: list[str]
    buckets: dict[str, int | None] | None  # AGENT_BUCKETS -> bytes, None: unknown
    buckets_note: str  # why a bucket is None


class ModelItem(TypedDict, total=False):
    """One registered model (agent/tensors/model_info.py)."""

    name: str  # its class
    params: int
    tensors: int
    trainable: int
    trainable_tensors: int
    param_bytes: int
    trainable_bytes: int
    bytes_per_param: float | None
    dtypes: dict[str, int]  # dtype -> parameters
    optimizer: JsonObject | None  # {"class", "module", and its hyperparameters}
    local_params: int  # this rank's share of params (a sharded run's local shards)


class InputItem(TypedDict, total=False):
    """The training forward's input (agent/tensors/input_shape.py)."""

    batch: int
    seq: int | None
    model: str | None
    output_bytes: int | None


class Scheme(StrEnum):
    """How a run shards or replicates its model (agent/tensors/sharded.py)."""

    FSDP2 = "FSDP2"  # torch.distributed.fsdp.fully_shard: weights, gradients, state sharded
    DDP = "DDP"  # DistributedDataParallel: replicated, gradients reduced in buckets
    ZERO = "ZeRO"  # DeepSpeed (its stage in zero_stage; its partitions are not read)


class ShardedItem(TypedDict, total=False):
    """A sample's "sharded" figures (agent/tensors/sharded.py), absent for a run that is neither."""

    scheme: str | None  # Scheme
    world_size: int | None  # the process group's size (None: not initialised)
    zero_stage: int | None  # DeepSpeed only
    note: str  # DeepSpeed only: its ZeRO breakdown is not read
    fsdp_unsharded: dict[str, int] | None  # device -> bytes of all-gathered copies alive now
    ddp_buckets: dict[str, int] | None  # device -> bytes of DDP's gradient buckets besides the gradients


class SampleItem(TypedDict, total=False):
    seq: int
    kind: str  # ItemKind.SAMPLE
    t: float
    step: int
    devices: list[DeviceFigures]
    settings: AllocatorSettings
    models: list[ModelItem]
    input: InputItem | None
    sharded: ShardedItem | None
    agent: JsonObject  # the agent's own figures (PHASES_MEASURED, errors, walks, ...)


class ModuleRow(TypedDict, total=False):
    """One module of a "modules" item (agent/modules/module_sampler.py): bytes, None = not available."""

    name: str  # as named_modules gives it
    parent: str | None
    weights: int | None
    gradients: int | None
    optimizer_state: int | None
    activations: int | None  # saved for backward by the sampled step's forward
    shared: bool  # holds a parameter tied with another module
    why: str | None  # why a figure is None


class ModulesItem(TypedDict, total=False):
    """Per-module figures of one watched model at a sampled step."""

    seq: int
    kind: str  # ItemKind.MODULES
    t: float
    step: int
    device: str
    model: str  # its class
    every: int  # one step in ``every`` is sampled
    cut: int | None  # how many modules were left out of the tree
    modules: list[ModuleRow]
    why: str | None  # why no step could be measured


class StepDevice(TypedDict):
    allocated_after: int | None
    peak_allocated: int | None


class StepItem(TypedDict, total=False):
    seq: int
    kind: str  # ItemKind.STEP
    t: float
    step: int
    duration: float | None
    source: str
    devices: dict[str, StepDevice] | None  # None: the allocator was not read at this step
    phases: dict[str, dict[str, int | None]] | None  # device -> Phase -> allocated at its end
    phase_order: list[str]
    phase_times: dict[str, float]
    # device -> Phase -> [peak, its upper bound or None: the peak is exact]
    phase_peaks: dict[str, dict[str, tuple[int | None, int | None]]] | None


class EventItem(TypedDict, total=False):
    seq: int
    kind: str  # ItemKind.EVENT
    t: float
    event: str  # EventKind
    data: JsonObject
