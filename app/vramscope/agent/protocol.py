"""The agent's wire protocol, shared by the agent and the monitor's client.

One frame = an 8-byte header + a JSON object (UTF-8):

    offset  size  field
    0       2     magic b"VS"
    2       1     protocol version (PROTOCOL_VERSION)
    3       1     flags (0; reserved)
    4       4     payload length, unsigned big-endian, <= MAX_FRAME

Anything else -- wrong magic, an unknown version, non-zero flags, a length
over the limit, a payload that is not a JSON object -- is a ProtocolError.
The reader checks the header before it buffers the payload, so a huge
length prefix costs nothing. A frame of a version this side does not speak
is read whole (the header layout never changes) and reported as a
``VersionMismatch``: the agent answers it with an error in the version the
client used, the client shows the mismatch instead of silently seeing no
agent.

The vocabulary both sides use -- request ops, item kinds, event kinds, step
phases, bucket names, the shapes of the items (``TypedDict``s; the monitor
decodes them once into typed values, sources/agents/agent_input.py) -- is defined
here once.
Standard library only (runs inside training).
"""

from __future__ import annotations

import enum
import json
import struct
import sys
from collections.abc import Mapping
from typing import NewType, TypedDict

from vramscope.agent import json_limits

if sys.version_info >= (3, 11):
    from enum import StrEnum as StrEnum  # (the explicit re-export: core/samples.py and others use it)
else:  # Python 3.10: the same behaviour, spelled out

    class StrEnum(str, enum.Enum):
        """A str whose members print as their value (enum.StrEnum, Python 3.11+)."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str.__format__(str(self.value), spec)


MAGIC = b"VS"
PROTOCOL_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})  # versions this side reads and answers in


class Op(StrEnum):
    """Requests the agent answers (read-only, but RECORD_SITES: agent/requests.py)."""

    HELLO = "hello"
    PULL = "pull"
    STATUS = "status"
    ALLOCATOR = "allocator"  # the allocator's segments summarised now (agent/allocator_watch.py)
    RECORD_SITES = "record_sites"  # allocation sites for N steps (agent/site_recorder.py)


class ItemKind(StrEnum):
    """What the agent's ring holds: periodic samples, one item per step, events."""

    SAMPLE = "sample"
    STEP = "step"
    EVENT = "event"
    MODULES = "modules"  # per-module bytes of a sampled step (agent/module_sampler.py)
    ALLOCATOR = "allocator"  # a memory snapshot's summary (agent/segments.py)


class EventKind(StrEnum):
    LOADED = "loaded"  # allocated after loading, before the first forward
    OOM = "oom"
    EVAL_AUTOGRAD = "eval_autograd"
    CHECKPOINTING_USE_CACHE = "checkpointing_use_cache"
    STEP = "step"  # the monitor's view of a step item (AgentEvent)
    PROCESS_GROUP_INIT = "process_group_init"  # torch.distributed.init_process_group returned
    COMPILE = "compile"  # torch.compile finished compiling a graph
    SITES = "sites"  # allocation sites recording: progress, then the top sites (agent/site_recorder.py)


class Phase(StrEnum):
    """Where in a training step allocated is read (agent/phases.py)."""

    FORWARD = "forward"  # end of the forward pass: activations held
    BACKWARD = "backward"  # end of backward: gradients there, activations freed
    OPTIMIZER = "optimizer"  # after the optimizer step
    EVAL = "eval"  # end of a forward under no_grad (an evaluation pass between steps)


PHASES = tuple(Phase)
TRAINING_PHASES = (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)  # every measured step has these


class Bucket(StrEnum):
    """Where a device's memory goes. The first three come from the tensors the
    agent sums at the instant of a sample, the next two from the allocator at
    the same instant; outside_pytorch is added by the monitor (NVML's figure for
    the process minus what PyTorch reserved)."""

    WEIGHTS = "weights"  # parameters and buffers
    GRADIENTS = "gradients"
    OPTIMIZER_STATE = "optimizer_state"
    OTHER_ALLOCATED = "other_allocated"  # activations + temporaries = allocated - the three
    CACHED_FREE = "cached_free"  # reserved - allocated
    OUTSIDE_PYTORCH = "outside_pytorch"


# what each bucket counts, where the definition is not obvious (the agents tab's help, README)
BUCKET_MEANING = {
    Bucket.WEIGHTS: "parameters and buffers (e.g. BatchNorm statistics) of the known models",
    Bucket.GRADIENTS: (
        "memory held for a gradient until it is freed: a gradient that zero_grad(set_to_none=True) "
        "dropped counts until its memory goes back to the allocator (at once, unless something "
        "still holds it, e.g. a view kept by the code)"
    ),
    Bucket.OPTIMIZER_STATE: "every tensor in the optimizers' state (Adam's moments, step counters)",
    Bucket.OTHER_ALLOCATED: "allocated minus the three above: activations saved for backward and temporaries",
}

TENSOR_BUCKETS = (Bucket.WEIGHTS, Bucket.GRADIENTS, Bucket.OPTIMIZER_STATE)
AGENT_BUCKETS = TENSOR_BUCKETS + (Bucket.OTHER_ALLOCATED, Bucket.CACHED_FREE)  # what the agent sends
BUCKETS = AGENT_BUCKETS + (Bucket.OUTSIDE_PYTORCH,)  # what the monitor shows

# -- the shapes of what the agent sends (JSON objects; the monitor checks every field,
# sources/agents/agent_input.py, and decodes each item once into a frozen value) -------------
# A new item kind: a TypedDict here, an ItemKind or EventKind member, and a decoder in
# sources/agents/agent_input.py returning a frozen dataclass.


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
    """One device of a sample: the allocator's figures (agent/stats.py) and the buckets."""

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
    """One registered model (agent/model_info.py)."""

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
    """The training forward's input (agent/input_shape.py)."""

    batch: int
    seq: int | None
    model: str | None
    output_bytes: int | None


class Scheme(StrEnum):
    """How a run shards or replicates its model (agent/sharded.py)."""

    FSDP2 = "FSDP2"  # torch.distributed.fsdp.fully_shard: weights, gradients, state sharded
    DDP = "DDP"  # DistributedDataParallel: replicated, gradients reduced in buckets
    ZERO = "ZeRO"  # DeepSpeed (its stage in zero_stage; its partitions are not read)


class ShardedItem(TypedDict, total=False):
    """A sample's "sharded" figures (agent/sharded.py), absent for a run that is neither."""

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
    """One module of a "modules" item (agent/module_sampler.py): bytes, None = not available."""

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


# -- field names of a sample's figures ------------------------------------------------
# the peak since the previous sample is exact where this is None; otherwise
# "peak_allocated" is a lower bound and this the upper one (agent/peak_window.py PeakWindow)
PEAK_BOUND = "peak_allocated_bound"
PHASES_MEASURED = "phases_measured"  # (a sample's "agent" figures) share of steps with phase readings
# (the monitor's store keys for these series: core/agent_figures/agent_keys.py)


HEADER = struct.Struct(">2sBBI")
HEADER_SIZE = HEADER.size  # 8
MAX_FRAME = 4 * 1024 * 1024  # payload bytes; pull replies are cut to fit

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class ProtocolError(ValueError):
    """The peer sent something that is not a valid frame; close the connection."""


class VersionMismatch(ProtocolError):
    """A well-formed frame in a protocol version this side does not speak."""

    def __init__(self, version: int):
        self.version = version
        super().__init__(f"protocol version {version} not supported (this side speaks {describe_versions()})")


def describe_versions() -> str:
    return ", ".join(str(v) for v in sorted(SUPPORTED_VERSIONS))


def version_error(client_version: int) -> dict[str, object]:
    """The agent's answer to a request in a version it does not speak."""
    return {
        "ok": False,
        "error": f"protocol version {client_version} not supported by this agent "
        f"(it speaks {describe_versions()})",
        "protocol": PROTOCOL_VERSION,
        "supported": sorted(SUPPORTED_VERSIONS),
    }


def encode_payload(obj: Mapping[str, object]) -> bytes:
    """A JSON object as compact UTF-8 (NaN/inf refused: JSON has no such numbers)."""
    if not isinstance(obj, dict):
        raise TypeError("a frame payload is a JSON object (dict)")
    return _encoder.encode(obj).encode("utf-8")


def frame_bytes(payload: bytes, version: int = PROTOCOL_VERSION) -> bytes:
    """Wrap already-encoded JSON bytes in a frame header."""
    if len(payload) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(payload)} bytes exceeds the {MAX_FRAME}-byte limit")
    return HEADER.pack(MAGIC, version, 0, len(payload)) + payload


def encode(obj: Mapping[str, object]) -> bytes:
    return frame_bytes(encode_payload(obj))


def decode_payload(payload: bytes) -> dict[str, object]:
    try:
        obj = json_limits.loads(payload)  # nesting bounded: no RecursionError from a peer
    except ValueError as exc:
        raise ProtocolError(f"payload is not UTF-8 JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("payload is not a JSON object")
    return obj


def read_header(header: bytes) -> tuple[int, int]:
    """Validate an 8-byte header's layout; return (version, payload length).
    The version is checked by the caller (see ``check_header``)."""
    magic, version, flags, length = HEADER.unpack(header)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic {magic!r} (not a vramscope agent frame)")
    if flags != 0:
        raise ProtocolError(f"unknown flags {flags:#x}")
    if length > MAX_FRAME:
        raise ProtocolError(f"frame length {length} exceeds the {MAX_FRAME}-byte limit")
    return version, length


def check_header(header: bytes) -> int:
    """Validate an 8-byte header, version included; return the payload length."""
    version, length = read_header(header)
    if version not in SUPPORTED_VERSIONS:
        raise VersionMismatch(version)
    return length


def decode(data: bytes) -> dict[str, object]:
    """Decode exactly one complete frame."""
    if len(data) < HEADER_SIZE:
        raise ProtocolError("truncated frame header")
    length = check_header(data[:HEADER_SIZE])
    if len(data) != HEADER_SIZE + length:
        raise ProtocolError(f"frame says {length} payload bytes, got {len(data) - HEADER_SIZE}")
    return decode_payload(data[HEADER_SIZE:])


class FrameReader:
    """Incremental decoder: feed() whatever bytes arrived, get whole messages.

    After any other ProtocolError the reader is poisoned (the stream has
    lost its framing); the connection must be closed.

    A frame in a version this side does not speak is read whole first, so
    the stream stays in step, then raises ``VersionMismatch`` (the reader is
    not poisoned by it: ``version`` says what the peer speaks and an answer in
    that version can follow).
    """

    __slots__ = ("_buf", "_need", "_broken", "_version", "version")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._need: int | None = None  # payload length once the header is read
        self._version = PROTOCOL_VERSION  # of the frame being read
        self._broken = False
        self.version = PROTOCOL_VERSION  # of the last complete frame the peer sent

    @property
    def pending(self) -> int:
        """Bytes buffered towards an incomplete frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[dict[str, object]]:
        if self._broken:
            raise ProtocolError("stream already failed")
        self._buf += data
        out: list[dict[str, object]] = []
        try:
            while True:
                if self._need is None:
                    if len(self._buf) < HEADER_SIZE:
                        # check the magic early so garbage fails fast
                        if self._buf and not MAGIC.startswith(bytes(self._buf[:2])):
                            raise ProtocolError("bad magic (not a vramscope agent frame)")
                        break
                    self._version, self._need = read_header(bytes(self._buf[:HEADER_SIZE]))
                    del self._buf[:HEADER_SIZE]
                if len(self._buf) < self._need:
                    break
                payload = bytes(self._buf[: self._need])
                del self._buf[: self._need]
                self._need = None
                self.version = self._version
                if self._version not in SUPPORTED_VERSIONS:
                    raise VersionMismatch(self._version)
                out.append(decode_payload(payload))
        except VersionMismatch:
            raise
        except ProtocolError:
            self._broken = True
            self._buf.clear()
            raise
        return out
