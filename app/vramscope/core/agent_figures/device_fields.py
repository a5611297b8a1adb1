"""The allocator figures an agent's device report carries, declared once: the key
(the ``AgentDevice`` field, the session's column, the status JSON's and the trace's
key), the words texts use, the unit, and one line saying what it is.

``vramscope status --json`` (core/status/status_report.py), the Prometheus gauges
(core/export/metrics.py), the trace export's allocator counters (core/export/) and the
agents tab's device title (ui/agents/agent_device.py) are derived from
``DEVICE_FIELDS``: a figure added here (and to ``AgentDevice``, and to what the
agent sends: agent/protocol.py ``ALLOCATOR_FIGURES``) shows in each of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramscope.core.samples import AgentDevice
from vramscope.core.units import fmt_bytes

BYTES = "bytes"
COUNT = "count"


@dataclass(frozen=True, slots=True)
class DeviceField:
    key: str  # the AgentDevice field; also its session column, JSON key and trace arg
    label: str  # how texts name it: "inactive split"
    unit: str  # BYTES or COUNT
    says: str  # what it is, one line (the Prometheus gauge's help)

    def value(self, dev: AgentDevice) -> int | None:
        value: int | None = getattr(dev, self.key)
        return value

    def text(self, value: int | None) -> str:
        """The value as a text shows it: "3.0 GiB", "2"."""
        return fmt_bytes(value) if self.unit == BYTES else str(value)

    @property
    def metric(self) -> str:
        """Its Prometheus gauge: vramscope_agent_allocated_bytes, vramscope_agent_ooms."""
        name = "vramscope_agent_" + self.key.removeprefix("num_")
        return name + "_bytes" if self.unit == BYTES else name


DEVICE_FIELDS: tuple[DeviceField, ...] = (
    DeviceField("allocated", "allocated", BYTES, "PyTorch allocated bytes"),
    DeviceField("reserved", "reserved", BYTES, "PyTorch reserved (cached) bytes"),
    DeviceField("inactive_split", "inactive split", BYTES, "Inactive split blocks (non-releasable)"),
    DeviceField("peak_allocated", "peak", BYTES, "Peak allocated in the last sampling interval"),
    DeviceField("num_alloc_retries", "alloc retries", COUNT, "cudaMalloc retries (allocator flushes)"),
    DeviceField("num_ooms", "OOMs", COUNT, "Out-of-memory errors seen by the allocator"),
)
