"""One frame as `vramscope status` shows it on a terminal: the same content as
the JSON (core/status/status_report.py), as aligned lines, every text that came from
other users and machines escaped (core/status/terminal_text.py)."""

from __future__ import annotations

import time as _time
from collections.abc import Iterable
from typing import Any

from vramscope.core.agent_figures.allocator_figures import device_figures, figures_line
from vramscope.core.agent_figures.device_fields import COUNT, DEVICE_FIELDS
from vramscope.core.processes.containers import container_text
from vramscope.core.processes.scheduler_totals import job_totals, pod_totals
from vramscope.core.samples import BUCKET_LABELS, AgentReport, Frame, GpuSample
from vramscope.core.detectors.agentmap import device_label
from vramscope.core.agent_figures.module_text import module_lines
from vramscope.core.processes.process_text import command_text, user_text
from vramscope.core.status.status_report import agents_shown, notices, plain_value
from vramscope.core.status.terminal_text import visible
from vramscope.core.units import NA, fmt_bytes, fmt_duration, fmt_percent
from vramscope.core.processes.user_totals import user_totals


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


def render_table(
    frame: Frame, alerts: Iterable[Any] = (), boot_time: float | None = None, every_agent: bool = False
) -> str:
    """The same content as the JSON, for a terminal: each line's text from other
    users and machines (commands, names, errors) escaped (core/status/terminal_text.py),
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
        contained = any(container_text(p.info) for p in gpu.processes)
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
            command = command_text(p)  # the window's words (core/processes/process_text.py)
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
    for title, owners in (("memory by Slurm job:", job_totals(frame)), ("memory by pod:", pod_totals(frame))):
        if owners:
            lines.append("")
            lines.append(title)
            rows = [(t.label, fmt_bytes(t.used), _per_gpu_text(t), f"({t.stop})") for t in owners]
            lines.extend(_columns(rows, right={1}, indent="  "))
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
            plain = plain_value(a)
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
            # the counters (alloc retries, OOMs: core/agent_figures/device_fields.py), where they rose
            line += "".join(
                f", {f.label} {f.text(n)}" for f in DEVICE_FIELDS if f.unit == COUNT and (n := f.value(d))
            )
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
