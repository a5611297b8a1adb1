"""A session's GPUs and processes as read back (the ``gpus`` and ``processes``
tables), with where each one is: a GPU or a process of another machine
(--host, a fleet) names its host, as it did live."""

from __future__ import annotations

import dataclasses

from vramscope.core.processes.containers import container_from_dict
from vramscope.core.processes.process_text import capped_command
from vramscope.core.samples import Container, ProcessInfo, gpu_label
from vramscope.core.session.columns import index, loads, number_or_none, text_or_none
from vramscope.core.session.schema import GPU_KIND, GPU_PLACE, gpu_host

# processes columns that older files may lack (they read as None)
LATER_PROCESS_COLUMNS = ("container", "ns_pid", "host")


@dataclasses.dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    host: str | None = None  # another machine's GPU: that machine (None: this one)
    host_index: int | None = None  # its index there
    vendor: str | None = None  # NVIDIA / AMD / Intel (None in files older than the column)
    memory_kind: str | None = None  # "unified": the system's memory (samples.UNIFIED_MEMORY)

    @property
    def label(self) -> str:
        return gpu_label(self.index, self.host, self.host_index)


@dataclasses.dataclass(frozen=True)
class ProcessRecord:
    id: int
    pid: int
    start_time: float | None
    user: str | None
    name: str | None
    command: str | None
    ppid: int | None = None
    first_seen: float | None = None
    container: Container | None = None
    ns_pid: int | None = None
    host: str | None = None  # the machine it ran on, when not this one

    def info(self) -> ProcessInfo:
        return ProcessInfo(
            pid=self.pid,
            start_time=self.start_time,
            user=self.user,
            name=self.name,
            cmdline=tuple(self.command.split()) if self.command else None,
            ppid=self.ppid,
            container=self.container,
            ns_pid=self.ns_pid,
        )


GPU_SELECT = ("gpu", "name", "uuid", "pci_bus_id", *GPU_PLACE, *GPU_KIND)


def gpu_info(row, meta: dict) -> GpuInfo:
    """One ``gpus`` row (GPU_SELECT); a file without the host columns but with the
    ``hosts`` meta (written before them) is placed from the meta."""
    gpu, name, uuid, bus, host, host_index, vendor, memory_kind = row
    place = (
        {"host": text_or_none(host), "host_index": host_index if index(host_index) else None}
        if text_or_none(host) is not None
        else gpu_host(meta, gpu)
    )
    return GpuInfo(
        gpu,
        text_or_none(name),
        text_or_none(uuid),
        text_or_none(bus),
        **place,
        vendor=text_or_none(vendor),
        memory_kind=text_or_none(memory_kind),
    )


PROCESS_SELECT = (
    "id",
    "pid",
    "start_time",
    "user",
    "name",
    "command",
    "ppid",
    "first_seen",
    *LATER_PROCESS_COLUMNS,
)


def process_record(r) -> ProcessRecord:
    """One ``processes`` row (PROCESS_SELECT)."""
    return ProcessRecord(
        r[0],
        r[1],
        number_or_none(r[2]),
        text_or_none(r[3]),
        text_or_none(r[4]),
        capped_command(text_or_none(r[5])),  # (older versions kept whole argvs)
        r[6] if index(r[6]) else None,
        number_or_none(r[7]),
        container_from_dict(loads(r[8])),
        r[9] if index(r[9]) else None,
        text_or_none(r[10]),
    )
