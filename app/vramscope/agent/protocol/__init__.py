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

The vocabulary both sides use is defined once, in this package: the names --
request ops, item kinds, event kinds, step phases, bucket names -- in
``names``; the shapes of the items (``TypedDict``s; the monitor decodes them
once into typed values, sources/agents/agent_input.py) in ``items``; the
frames in ``framing``. Importers take them from the package.
Standard library only (runs inside training).
"""

from __future__ import annotations

from vramscope.agent.protocol.framing import (
    check_header,
    decode,
    decode_payload,
    describe_versions,
    encode,
    encode_payload,
    frame_bytes,
    FrameReader,
    HEADER,
    HEADER_SIZE,
    MAGIC,
    MAX_FRAME,
    PROTOCOL_VERSION,
    ProtocolError,
    read_header,
    SUPPORTED_VERSIONS,
    version_error,
    VersionMismatch,
)
from vramscope.agent.protocol.items import (
    ALLOCATOR_FIGURES,
    AllocatorSetting,
    AllocatorSettings,
    DeviceFigures,
    EventItem,
    HelloReply,
    InputItem,
    JsonObject,
    ModelItem,
    ModuleRow,
    ModulesItem,
    SampleItem,
    Scheme,
    ShardedItem,
    StepDevice,
    StepItem,
)
from vramscope.agent.protocol.names import (
    AGENT_BUCKETS,
    Bucket,
    BUCKET_MEANING,
    BUCKETS,
    EventKind,
    ItemKind,
    Op,
    PEAK_BOUND,
    Phase,
    PHASES,
    PHASES_MEASURED,
    StrEnum,
    TENSOR_BUCKETS,
    TRAINING_PHASES,
)

__all__ = [
    "AGENT_BUCKETS",
    "ALLOCATOR_FIGURES",
    "AllocatorSetting",
    "AllocatorSettings",
    "BUCKETS",
    "BUCKET_MEANING",
    "Bucket",
    "DeviceFigures",
    "EventItem",
    "EventKind",
    "FrameReader",
    "HEADER",
    "HEADER_SIZE",
    "HelloReply",
    "InputItem",
    "ItemKind",
    "JsonObject",
    "MAGIC",
    "MAX_FRAME",
    "ModelItem",
    "ModuleRow",
    "ModulesItem",
    "Op",
    "PEAK_BOUND",
    "PHASES",
    "PHASES_MEASURED",
    "PROTOCOL_VERSION",
    "Phase",
    "ProtocolError",
    "SUPPORTED_VERSIONS",
    "SampleItem",
    "Scheme",
    "ShardedItem",
    "StepDevice",
    "StepItem",
    "StrEnum",
    "TENSOR_BUCKETS",
    "TRAINING_PHASES",
    "VersionMismatch",
    "check_header",
    "decode",
    "decode_payload",
    "describe_versions",
    "encode",
    "encode_payload",
    "frame_bytes",
    "read_header",
    "version_error",
]
