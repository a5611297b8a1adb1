"""One frame as `vramscope status --json` gives it: a JSON-ready dict (the table
for a terminal: core/status/status_table.py).

Qt-free. Bytes are integers, "not available" is null (None), never 0.

    {"time", "source", "simulated", "driver_version", "cuda_driver_version", "error",
     "host_pids",
     "gpus": [{"index", "name", "uuid", "pci_bus_id",
               "memory": {"total", "used", "free", "reserved"},
               "utilization": {"gpu", "memory"}, "temperature", "power": {"usage_w", "limit_w"},
               "error", "asleep",
               "processes": [{"pid", "used", "sm", "user", "command", "start_time",
                              "kinds", "visibility", "agent", "ns_pid", "mig_uuid",
                              "container": {"runtime", "id", "name", "pod_uid", "pod",
                                            "namespace"} | null,
                              "slurm": {"job_id", "step", "uid", "user", "name"} | null}],
               "mig_mode",
               "mig_slices": [{"index", "uuid", "name", "profile", "gpu_instance_id",
                               "compute_instance_id", "memory": {"total", "used", "free"},
                               "processes": [...]}],
               "vendor": "NVIDIA" | "AMD" | "Intel" | null,
               "memory_kind": "unified" | null (the board's own memory),
               "not_reported": {figure: why it is null for this GPU}}],
     "users": [{"user", "used", "gpus": [{"gpu", "used"}], "processes", "unreported"}],
     "slurm_jobs", "pods": [{"key", "label", "used", "gpus": [{"gpu", "used"}], "processes",
                             "unreported", "stop"}]  (per Slurm job, per Kubernetes pod),
     "device_holders": [{"pid", "user", "command", "devices", "container", "ns_pid"}],
     "wsl", "notices",
     "jobs": [{"key", "world_size", "ranks": [{"rank", "pid", "held"}], "imbalance",
               "heavy": [{"rank", "held", "over_median"}]}],
     "agents": [{"pid", "start_time", "rank", "world_size", "rendezvous", "input", "sharded",
                 "step", "connected", "error",
                 "devices": [{"device", "allocated", "reserved", "inactive_split",
                 "peak_allocated", "num_alloc_retries", "num_ooms",
                 "buckets": {every bucket the window shows, by the same names},
                 "buckets_note",
                 "allocator": {"step", "t", "free_split", "free_segments", "largest_free_block",
                               "largest_request", "expandable_recovers",
                               "private_pools": {"reserved", "allocated", "segments"},
                               "not_reported": {figure: why it is null}}}],
                 "events": [{"kind", "time", "data"}],
                 "modules": [{"name", "weights", "gradients", "optimizer_state", "activations",
                              "measured_step", "why" (where a figure is null), "shared"}]}],
     "alerts": [...]}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Protocol

from vramscope.core.agent_figures.allocator_figures import device_figures
from vramscope.core.agent_figures.device_fields import DEVICE_FIELDS
from vramscope.core.samples import (
    ALL_BUCKETS,
    AgentDevice,
    AgentEvent,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
    MigSlice,
    ProcessInfo,
)
from vramscope.core.detectors.agentmap import gpu_for_device
from vramscope.core.processes.rank_groups import Job, jobs
from vramscope.core.wsl import WSL_NOTICE
from vramscope.core.processes.scheduler_totals import job_totals, pod_totals
from vramscope.core.processes.user_totals import user_totals


# -- JSON -------------------------------------------------------------------------------

ENDED_SHOWN = 3  # ended agent runs listed by `status` (the latest of this boot); --all-agents: all


def agents_shown(
    frame: Frame, boot_time: float | None = None, every: bool = False
) -> tuple[list[AgentReport], int]:
    """(the agents `status` lists, how many ended runs it leaves out): every live
    one, and the latest ENDED_SHOWN ended runs started since ``boot_time``."""
    live = [a for a in frame.agents if a.connected]
    ended = [a for a in frame.agents if not a.connected]
    if every:
        return live + ended, 0
    kept = [a for a in ended if boot_time is None or a.start_time is None or a.start_time >= boot_time]
    kept.sort(key=lambda a: -(a.time or a.start_time or 0.0))
    return live + kept[:ENDED_SHOWN], len(ended) - len(kept[:ENDED_SHOWN])


def frame_to_dict(
    frame: Frame, alerts: Iterable[object] = (), boot_time: float | None = None, every_agent: bool = False
) -> dict[str, object]:
    agents, left_out = agents_shown(frame, boot_time, every_agent)
    return {
        "time": frame.time,
        "source": frame.source,
        "simulated": frame.simulated,
        "driver_version": frame.driver_version,
        "cuda_driver_version": frame.cuda_driver_version,
        "error": frame.error,
        "wsl": frame.wsl,
        "notices": notices(frame),
        "host_pids": frame.host_pids,
        "gpus": [gpu_to_dict(g) for g in frame.gpus],
        "users": [t.as_dict() for t in user_totals(frame)],
        "slurm_jobs": [t.as_dict() for t in job_totals(frame)],
        "pods": [t.as_dict() for t in pod_totals(frame)],
        "device_holders": [
            {
                "pid": h.info.pid,
                "user": h.info.user,
                "command": h.info.command,
                "devices": list(h.devices),
                **_container_fields(h.info),
            }
            for h in frame.device_holders
        ],
        "agents": [agent_to_dict(a, frame) for a in agents],
        "jobs": [job_to_dict(j) for j in jobs(agents, frame)],
        "ended_agents_left_out": left_out,
        "servers": [dataclasses.asdict(s) for s in frame.servers],
        "alerts": [plain_value(a) for a in alerts],
    }


def notices(frame: Frame) -> list[str]:
    """What the user must know to read this report right: trouble in the pipeline
    (Frame.notices) and the platform's limits (WSL), each said once."""
    return [*frame.notices, *([WSL_NOTICE] if frame.wsl else [])]


class HostStanding(Protocol):
    """What ``hosts_to_dict`` reads of a host (sources/remote.HostView)."""

    @property
    def host(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def frame(self) -> Frame | None: ...
    @property
    def alerts(self) -> Iterable[object]: ...
    @property
    def error(self) -> str | None: ...
    @property
    def remote_version(self) -> str | None: ...


def hosts_to_dict(views: Iterable[HostStanding]) -> dict[str, object]:
    """`status --host ...`: one entry per host (sources/remote.HostView): its frame
    as frame_to_dict has it, or its error and no GPUs."""
    hosts = []
    for view in views:
        body = (
            frame_to_dict(view.frame, view.alerts)
            if view.frame is not None
            else {"gpus": [], "agents": [], "alerts": []}
        )
        error = view.error if view.frame is None else body.get("error")
        hosts.append(
            {
                "host": view.host,
                "state": view.state,
                "vramscope_version": view.remote_version,
                **body,
                "error": error,
            }
        )
    return {"hosts": hosts}


def gpu_to_dict(gpu: GpuSample) -> dict[str, object]:
    where = {} if gpu.host is None else {"host": gpu.host, "host_index": gpu.host_index}
    return {
        **where,
        "index": gpu.index,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "pci_bus_id": gpu.pci_bus_id,
        "memory": {
            "total": _int(gpu.total),
            "used": _int(gpu.used),
            "free": _int(gpu.free),
            "reserved": _int(gpu.reserved),
        },
        "utilization": {"gpu": gpu.util_gpu, "memory": gpu.util_memory},
        "temperature": gpu.temperature,
        "power": {"usage_w": gpu.power_w, "limit_w": gpu.power_limit_w},
        "error": gpu.error,
        "asleep": gpu.asleep,
        "processes": [process_to_dict(p) for p in gpu.processes],
        "mig_mode": gpu.mig_mode,
        "mig_slices": [slice_to_dict(s) for s in gpu.slices],
        "vendor": gpu.vendor,
        "memory_kind": gpu.memory_kind,
        "not_reported": dict(gpu.not_reported),
    }


def slice_to_dict(mig: MigSlice) -> dict[str, object]:
    return {
        "index": mig.index,
        "uuid": mig.uuid,
        "name": mig.name,
        "profile": mig.profile,
        "gpu_instance_id": mig.gpu_instance_id,
        "compute_instance_id": mig.compute_instance_id,
        "memory": {"total": _int(mig.total), "used": _int(mig.used), "free": _int(mig.free)},
        "error": mig.error,
        "processes": [process_to_dict(p) for p in mig.processes],
    }


def process_to_dict(proc: GpuProcess) -> dict[str, object]:
    info = proc.info
    return {
        "pid": proc.pid,
        "used": _int(proc.used),
        "sm": proc.sm,
        "user": info.user if info else None,
        "command": info.command if info else None,
        "start_time": info.start_time if info else None,
        "kinds": list(proc.kinds),
        "visibility": info.visibility if info else None,
        "agent": bool(proc.has_agent),
        "mig_uuid": proc.mig_uuid,
        **_container_fields(info),
    }


def _container_fields(info: ProcessInfo | None) -> dict[str, object]:
    container = info.container if info is not None else None
    return {
        "container": container.as_dict() if container is not None else None,
        "ns_pid": info.ns_pid if info is not None else None,
        "slurm": dataclasses.asdict(info.slurm) if info is not None and info.slurm is not None else None,
    }


def agent_to_dict(report: AgentReport, frame: Frame | None = None) -> dict[str, object]:
    """A live agent with its new events; an ended run as its summary (no events)."""
    out: dict[str, object] = {
        "pid": report.pid,
        "start_time": report.start_time,
        "last_seen": report.time,
        "rank": report.rank,
        "world_size": report.world_size,
        "rendezvous": report.rendezvous,
        "input": report.measured_input,  # the micro-batch/sequence its figures were measured at
        "sharded": report.sharded,  # FSDP2 all-gathered copies, DDP buckets: {name: {device: bytes}}
        "step": report.step,
        "connected": report.connected,
        "error": report.error,  # e.g. a protocol version mismatch: why there are no figures
        "devices": [
            {
                **agent_device_to_dict(d, _gpu_index(frame, report, d)),
                "allocator": device_figures(report, d.device),
            }
            for d in report.devices
        ],
        "modules": [m.as_dict() for m in report.modules],
    }
    if report.connected:
        out["events"] = [event_to_dict(e) for e in report.events]
    return out


def job_to_dict(job: Job) -> dict[str, object]:
    """The ranks of one distributed job (core/processes/rank_groups.py)."""
    return {
        "key": job.key,
        "world_size": job.world_size,
        "ranks": [{"rank": r.rank, "pid": r.pid, "held": h} for r, h in zip(job.ranks, job.held)],
        "imbalance": job.imbalance,
        "heavy": [{"rank": rank, "held": held, "over_median": over} for rank, held, over in job.heavy],
    }


def _gpu_index(frame: Frame | None, report: AgentReport, dev: AgentDevice) -> int | None:
    gpu = gpu_for_device(frame, report, dev) if frame is not None else None
    return gpu.index if gpu is not None else None


def agent_device_to_dict(dev: AgentDevice, gpu: int | None = None) -> dict[str, object]:
    """``gpu``: the NVML index of the GPU the device is (torch's cuda:N renumbers)."""
    buckets = dev.buckets.as_dict() if dev.buckets is not None else dict.fromkeys(ALL_BUCKETS)
    return {
        "device": dev.device,
        "gpu": gpu,
        **{f.key: _int(f.value(dev)) for f in DEVICE_FIELDS},
        "buckets": {k: _int(v) for k, v in buckets.items()},
        "buckets_note": dev.buckets.note if dev.buckets is not None else None,
        "runtime": dev.runtime,
        "missing": list(dev.missing),
    }


def event_to_dict(event: AgentEvent) -> dict[str, object]:
    return {"kind": event.kind, "time": event.time, "data": plain_value(event.data)}


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def plain_value(value: object) -> object:
    """Something json.dumps can write: dataclasses and as_dict() objects become dicts."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain_value(v) for v in value]
    as_dict = getattr(value, "as_dict", None) or getattr(value, "to_dict", None)
    if callable(as_dict):
        return plain_value(as_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)
