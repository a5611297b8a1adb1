"""One frame as `vramscope status` shows it: a JSON-ready dict, or a table.

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
                                            "namespace"} | null}],
               "mig_mode",
               "mig_slices": [{"index", "uuid", "name", "profile", "gpu_instance_id",
                               "compute_instance_id", "memory": {"total", "used", "free"},
                               "processes": [...]}],
               "vendor": "NVIDIA" | "AMD" | "Intel" | null,
               "memory_kind": "unified" | null (the board's own memory),
               "not_reported": {figure: why it is null for this GPU}}],
     "users": [{"user", "used", "gpus": [{"gpu", "used"}], "processes", "unreported"}],
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
import time as _time
from collections.abc import Iterable
from typing import Any

from vramscope.core.allocator_figures import device_figures, figures_line
from vramscope.core.containers import container_text
from vramscope.core.samples import (
    ALL_BUCKETS,
    BUCKET_LABELS,
    AgentDevice,
    AgentEvent,
    AgentReport,
    Frame,
    GpuProcess,
    GpuSample,
    MigSlice,
)
from vramscope.core.detectors.agentmap import device_label, gpu_for_device
from vramscope.core.module_text import module_lines
from vramscope.core.process_text import command_text, user_text
from vramscope.core.rank_groups import jobs
from vramscope.core.terminal_text import visible
from vramscope.core.units import NA, fmt_bytes, fmt_duration, fmt_percent
from vramscope.core.wsl import WSL_NOTICE
from vramscope.core.user_totals import user_totals


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
    frame: Frame, alerts: Iterable[Any] = (), boot_time: float | None = None, every_agent: bool = False
) -> dict:
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
        "alerts": [_plain(a) for a in alerts],
    }


def notices(frame: Frame) -> list[str]:
    """What the user must know to read this report right: trouble in the pipeline
    (Frame.notices) and the platform's limits (WSL), each said once."""
    return [*frame.notices, *([WSL_NOTICE] if frame.wsl else [])]


def hosts_to_dict(views) -> dict:
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


def render_hosts(views) -> str:
    parts = []
    for view in views:
        # a blank line between hosts
        parts.append(("\n" if parts else "") + f"== {visible(view.host)} ==\n")
        if view.frame is None:
            parts.append(f"{visible(view.error or view.state)}\n")
        else:
            if view.error:  # e.g. a frame dropped for not fitting the schema
                parts.append(f"note: {visible(view.error)}\n")
            parts.append(render_table(view.frame, view.alerts))
    return "".join(parts)


def gpu_to_dict(gpu: GpuSample) -> dict:
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


def slice_to_dict(mig: MigSlice) -> dict:
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


def process_to_dict(proc: GpuProcess) -> dict:
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


def _container_fields(info) -> dict:
    container = info.container if info is not None else None
    return {
        "container": container.as_dict() if container is not None else None,
        "ns_pid": info.ns_pid if info is not None else None,
    }


def agent_to_dict(report: AgentReport, frame: Frame | None = None) -> dict:
    """A live agent with its new events; an ended run as its summary (no events)."""
    out = {
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


def job_to_dict(job) -> dict:
    """The ranks of one distributed job (core/rank_groups.py)."""
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


def agent_device_to_dict(dev: AgentDevice, gpu: int | None = None) -> dict:
    """``gpu``: the NVML index of the GPU the device is (torch's cuda:N renumbers)."""
    buckets = dev.buckets.as_dict() if dev.buckets is not None else dict.fromkeys(ALL_BUCKETS)
    return {
        "device": dev.device,
        "gpu": gpu,
        "allocated": _int(dev.allocated),
        "reserved": _int(dev.reserved),
        "inactive_split": _int(dev.inactive_split),
        "peak_allocated": _int(dev.peak_allocated),
        "num_alloc_retries": dev.num_alloc_retries,
        "num_ooms": dev.num_ooms,
        "buckets": {k: _int(v) for k, v in buckets.items()},
        "buckets_note": dev.buckets.note if dev.buckets is not None else None,
        "runtime": dev.runtime,
        "missing": list(dev.missing),
    }


def event_to_dict(event: AgentEvent) -> dict:
    return {"kind": event.kind, "time": event.time, "data": _plain(event.data)}


def _int(value) -> int | None:
    return None if value is None else int(value)


def _plain(value):
    """Something json.dumps can write: dataclasses and as_dict() objects become dicts."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    as_dict = getattr(value, "as_dict", None) or getattr(value, "to_dict", None)
    if callable(as_dict):
        return _plain(as_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


# -- table ------------------------------------------------------------------------------


def render_table(
    frame: Frame, alerts: Iterable[Any] = (), boot_time: float | None = None, every_agent: bool = False
) -> str:
    """The same content as the JSON, for a terminal: each line's text from other
    users and machines (commands, names, errors) escaped (core/terminal_text.py),
    so that none can drive the terminal or forge a line."""
    lines = []
    when = _time.strftime("%Y-%m-%d %H:%M:%S", _time.localtime(frame.time))
    head = [f"vramscope status  {when}"]
    if frame.driver_version:
        head.append(f"driver {frame.driver_version}")
    if frame.cuda_driver_version:
        head.append(f"CUDA {frame.cuda_driver_version}")
    if frame.simulated:
        head.append("SIMULATED DATA (demo)")
    lines.append("  ".join(head))
    if frame.error:
        lines.append(f"error: {frame.error}")
    lines.extend(f"note: {text}" for text in notices(frame))
    if not frame.gpus and not frame.error:
        lines.append("no GPUs found")
    agents = {a.pid for a in frame.agents}
    for gpu in frame.gpus:
        lines.append("")
        lines.append(_gpu_line(gpu))
        if gpu.error or gpu.asleep:
            continue
        lines.extend(_slice_lines(gpu))
        if not gpu.processes:
            lines.append("    no processes")
            continue
        contained = any(p.info is not None and p.info.container is not None for p in gpu.processes)
        rows = [
            ("PID", "TYPE", "USER", "MEMORY", "SM", "AGE")
            + (("CONTAINER",) if contained else ())
            + ("COMMAND",)
        ]
        for p in sorted(gpu.processes, key=lambda p: -(p.used or 0)):
            info = p.info
            age = None
            if info is not None and info.start_time is not None:
                age = max(0.0, frame.time - info.start_time)
            command = command_text(p)  # the window's words (core/process_text.py)
            marks = []
            if p.has_agent or p.pid in agents:
                marks.append("agent")
            mig = gpu.slice_of(p)
            if mig is not None:
                marks.append(f"MIG {mig.profile or mig.uuid}")
            if marks:
                command = f"{command}  ({', '.join(marks)})"
            rows.append(
                (
                    str(p.pid),
                    kind_text(p.kinds),
                    user_text(p),
                    fmt_bytes(p.used),
                    fmt_percent(p.sm),
                    fmt_duration(age),
                )
                + ((container_text(info),) if contained else ())
                + (command,)
            )
        lines.extend(_columns(rows, right={0, 3, 4, 5}, indent="    "))
    totals = user_totals(frame)
    if totals:
        lines.append("")
        lines.append("memory by user:")
        lines.extend(
            _columns([(t.label, fmt_bytes(t.used), _per_gpu_text(t)) for t in totals], right={1}, indent="  ")
        )
    if frame.device_holders:
        lines.append("")
        lines.append("holding /dev/nvidia* without being listed by the driver:")
        for h in frame.device_holders:
            lines.append(
                f"  pid {h.info.pid}  {h.info.user or NA}  {h.info.command or NA}  ({', '.join(h.devices)})"
            )
    agents, left_out = agents_shown(frame, boot_time, every_agent)
    if agents or left_out:
        lines.append("")
        lines.append("PyTorch agents:")
        lines.extend(_agent_lines(frame, agents))
        if left_out:
            lines.append(f"  + {left_out} earlier ended run(s) (--all-agents lists them)")
    alerts = list(alerts)
    lines.append("")
    if not alerts:
        lines.append("alerts: none")
    else:
        lines.append("alerts:")
        for a in alerts:
            plain = _plain(a)
            if isinstance(plain, dict):
                text = plain.get("title") or plain.get("message") or plain.get("kind") or str(plain)
            else:
                text = str(plain)
            lines.append(f"  - {text}")
    return "\n".join(visible(line) for line in lines) + "\n"


_BUCKET_WORDS = tuple(BUCKET_LABELS.items())  # the window's words


def _agent_lines(frame: Frame, agents: list[AgentReport]) -> list[str]:
    """Per agent process and device: allocated vs reserved and the buckets."""
    out = []
    for a in sorted(agents, key=lambda r: (not r.connected, r.pid)):
        who = f"  pid {a.pid}"
        if a.rank is not None:
            who += f" rank {a.rank}/{a.world_size}"
        who += f"  step {a.step if a.step is not None else NA}"
        if a.problem:
            who += f"  ({a.problem})"
        elif not a.connected:
            who += "  (ended)"
        out.append(who)
        for d in a.devices:
            if d.allocated is None and d.buckets is None:
                continue
            runtime = f" ({d.runtime})" if d.runtime else ""
            line = (
                f"    {device_label(frame, a, d)}{runtime}: allocated {fmt_bytes(d.allocated)}, "
                f"reserved {fmt_bytes(d.reserved)}"
                f", peak {fmt_bytes(d.peak_allocated)}"
            )
            if d.num_alloc_retries:
                line += f", alloc retries {d.num_alloc_retries}"
            if d.num_ooms:
                line += f", OOMs {d.num_ooms}"
            out.append(line)
            if d.buckets is not None:
                parts = [
                    f"{word} {fmt_bytes(getattr(d.buckets, name))}"
                    for name, word in _BUCKET_WORDS
                    if getattr(d.buckets, name) is not None
                ]
                if parts:
                    out.append("      " + " · ".join(parts))
                if d.buckets.note:
                    out.append("      " + d.buckets.note)
            if a.connected or a.allocator:
                out.append("      " + figures_line(device_figures(a, d.device)))
        out.extend(module_lines(a.modules))
    return out


def kind_text(kinds: tuple[str, ...]) -> str:
    """nvitop's TYPE: C (compute), G (graphics), C+G; '' where NVML listed neither."""
    return "+".join(k[0].upper() for k in ("compute", "graphics") if k in kinds)


def _slice_lines(gpu: GpuSample) -> list[str]:
    if not gpu.mig_mode:
        return []
    out = [
        f"    MIG mode: {len(gpu.slices)} slice{'s' if len(gpu.slices) != 1 else ''}"
        " (per-process SM % is not available on MIG: NVML does not report it)"
    ]
    for mig in gpu.slices:
        used = fmt_bytes(mig.used)
        total = fmt_bytes(mig.total)
        out.append(
            f"      {mig.profile or 'slice'}  GI {mig.gpu_instance_id} CI {mig.compute_instance_id}"
            f"  memory {used} / {total}  {mig.uuid or NA}"
        )
    return out


def _per_gpu_text(total) -> str:
    parts = [f"GPU {g}: {fmt_bytes(b)}" for g, b in total.per_gpu]
    if total.unreported:
        parts.append(f"{total.unreported} process(es) n/a")
    return ", ".join(parts)


def _gpu_line(gpu: GpuSample) -> str:
    name = gpu.name or "unknown GPU"
    if gpu.error:
        return f"{gpu.label}  {name}  ERROR: {gpu.error}"
    if gpu.asleep:
        return f"{gpu.label}  {name}  asleep (runtime-suspended; not queried until it wakes)"
    parts = [f"{gpu.label}  {name}"]
    if gpu.unified:
        parts.append("unified memory (the system's)")
    if gpu.total:
        pct = f" ({100.0 * gpu.used / gpu.total:.0f} %)" if gpu.used is not None else ""
        parts.append(f"memory {fmt_bytes(gpu.used)} / {fmt_bytes(gpu.total)}{pct}")
    else:
        parts.append(f"memory {fmt_bytes(gpu.used)} / {NA}")
    if gpu.reserved is not None:
        parts.append(f"reserved {fmt_bytes(gpu.reserved)}")
    parts.append(f"util {fmt_percent(gpu.util_gpu)}")
    if gpu.temperature is not None:
        parts.append(f"{gpu.temperature} °C")
    if gpu.power_w is not None:
        limit = f" / {gpu.power_limit_w:.0f} W" if gpu.power_limit_w is not None else " W"
        parts.append(f"{gpu.power_w:.0f}{limit}")
    return "  ".join(parts)


def _columns(rows, right=(), indent="") -> list[str]:
    rows = [tuple(visible(cell) for cell in r) for r in rows]  # widths as printed
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = []
        for i, cell in enumerate(r):
            last = i == len(r) - 1
            if last:
                cells.append(cell)
            elif i in right:
                cells.append(cell.rjust(widths[i]))
            else:
                cells.append(cell.ljust(widths[i]))
        out.append(indent + "  ".join(cells).rstrip())
    return out
